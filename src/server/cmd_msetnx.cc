// MSETNX key value [key value ...]: set every key, only if none exists.
//
// Redis runs it as one atomic step. The store offers per-key operations
// only (GET/PUT/DELETE and a per-key compare-and-swap), with no multi-key
// transaction and no conditional delete, so an atomic multi-key
// "create all or none" is not possible on it. What this does instead:
//
//   1. check:  GET every key. If one exists, answer 0: nothing was written.
//   2. create: CAS "only if absent" on every distinct key (the last value
//              given for a repeated key, as Redis stores it), in one batch.
//              All stored: answer 1.
//   3. undo:   otherwise (another client created a key between 1 and 2, or
//              the store refused one), DELETE each key step 2 created.
//   4. restore: a DELETE that removed a value other than ours removed a
//              write another client made after step 2: put it back with a
//              CAS "only if absent" (if a third write came meanwhile, that
//              newer write stays). Answer 0 (or the store's error).
//
// Guarantee, precisely:
//   * An existing value is never overwritten (every write is a CAS that
//     requires absence).
//   * Answer 1: every key was absent when this command created it, and
//     each now holds (or held, before later writes) this command's value.
//   * Answer 0 after step 1: this command wrote nothing.
//   * Answer 0 after step 3: the keys this command created are deleted
//     again; another client's write to one of them in between is restored
//     (step 4), so no completed write of another client is lost — unless
//     that client also deleted the key between steps 3 and 4, whose delete
//     step 4 then undoes, or wrote exactly this command's value, which
//     step 3 cannot tell from its own (the store compares values).
//   * Not atomic for observers: between steps 2 and 3 other clients can
//     read some of the keys set (and then see them vanish), and a key being
//     restored is briefly absent. Two MSETNX racing on overlapping keys can
//     both answer 0 where Redis would let one of them win.
// Without concurrent writers to its keys it behaves exactly as Redis's.
//
// Replies and the argument-count error are Redis 7.0's. The connection keeps
// its later commands on these keys waiting until this one is done (kCmdRmw).
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <spdlog/spdlog.h>

#include "server/cmd_common.h"
#include "server/cmd_types.h"
#include "server/cmd_rmw.h"
#include "server/command_table.h"
#include "server/connection.h"

namespace kvcg::server::cmd {

namespace {

constexpr uint8_t kCheck = kPhaseCommandBase;
constexpr uint8_t kCreate = kPhaseCommandBase + 1;
constexpr uint8_t kUndo = kPhaseCommandBase + 2;
constexpr uint8_t kRestore = kPhaseCommandBase + 3;

// The argument indexes of the keys to create: each distinct key once, at its
// last occurrence (whose value Redis would leave), in argument order.
// Deterministic, so every step recomputes the same list.
template <typename Fn>
void ForEachDistinctKey(CommandContext& ctx, Fn&& fn) {
  const size_t pairs = (ctx.argc() - 1) / 2;
  auto key = [&](size_t p) { return ctx.arg(1 + 2 * p); };
  if (pairs <= 16) {  // few keys: a quadratic scan, no allocation
    for (size_t p = 0; p < pairs; ++p) {
      bool repeated_later = false;
      for (size_t q = p + 1; q < pairs && !repeated_later; ++q) repeated_later = key(q) == key(p);
      if (!repeated_later) fn(1 + 2 * p);
    }
    return;
  }
  std::unordered_set<std::string_view> seen;
  std::vector<size_t> last_occurrences;  // walked from the end
  for (size_t p = pairs; p-- > 0;) {
    if (seen.insert(key(p)).second) last_occurrences.push_back(1 + 2 * p);
  }
  for (size_t k = last_occurrences.size(); k-- > 0;) fn(last_occurrences[k]);
}

// The first store error met (kept in cmd.i64 as its Code; -1: none), which
// becomes the reply once the undo is done.
void NoteError(server::Command& c, const OpResultView& x) {
  if (!x.succeeded() && c.i64 < 0) c.i64 = static_cast<int64_t>(x.code);
}

}  // namespace

void MSetNx(CommandContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.Error("ERR wrong number of arguments for 'msetnx' command");
    return;
  }
  // A key holding a list or set exists: nothing is written (as Redis).
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    if (HoldsCollection(ctx, ctx.arg(i))) return ctx.out.Integer(0);
  }
  ctx.cmd.phase = kCheck;
  for (size_t i = 1; i + 1 < ctx.argc(); i += 2) ctx.OpGet(ctx.arg(i));
}

// cmd.scratch from kCreate on: one byte per distinct key, '1' where step 2
// created it.
bool MSetNxFinish(CommandContext& ctx, ResultSpan r) {
  server::Command& c = ctx.cmd;
  switch (c.phase) {
    case kCheck: {
      for (OpResultView x : r) {
        if (!x.succeeded()) {
          ctx.StoreError(x);
          return true;
        }
      }
      for (OpResultView x : r) {
        if (x.found()) {
          ctx.out.Integer(0);
          return true;
        }
      }
      c.phase = kCreate;
      ForEachDistinctKey(ctx, [&](size_t i) { ctx.OpCas(ctx.arg(i), nullptr, ctx.arg(i + 1), kNoExpiry); });
      return false;
    }
    case kCreate: {
      bool all = true;
      c.scratch.clear();
      c.i64 = -1;
      for (OpResultView x : r) {
        bool created = x.code == Code::kNotFound;  // a CAS "only if absent" that stored
        c.scratch.push_back(created ? '1' : '0');
        all = all && created;
        NoteError(c, x);
      }
      if (all) {
        ctx.out.Integer(1);
        return true;
      }
      c.phase = kUndo;
      spdlog::debug("event=msetnx_undo id={} keys={}", ctx.conn.id(), c.scratch.size());
      size_t k = 0;
      ForEachDistinctKey(ctx, [&](size_t i) {
        if (c.scratch[k++] == '1') ctx.OpDelete(ctx.arg(i));
      });
      if (c.op_count > 0) return false;
      break;  // nothing was created
    }
    case kUndo: {
      // r holds one DELETE per created key, in the order issued.
      size_t k = 0, d = 0;
      c.phase = kRestore;
      ForEachDistinctKey(ctx, [&](size_t i) {
        if (c.scratch[k++] != '1') return;
        const OpResultView x = r[d++];
        NoteError(c, x);
        // Another client's value replaced ours after step 2: put it back.
        if (x.found() && x.value != ctx.arg(i + 1)) {
          spdlog::debug("event=msetnx_restore id={}", ctx.conn.id());
          ctx.OpCas(ctx.arg(i), nullptr, x.value, x.expire_at);  // with its TTL
        }
      });
      if (c.op_count > 0) return false;
      break;
    }
    case kRestore:
      // A restore that did not store lost to a newer write, which stays.
      for (OpResultView x : r) NoteError(c, x);
      break;
  }
  if (c.i64 >= 0) ctx.StoreError(OpResultView{static_cast<Code>(c.i64), {}});
  else ctx.out.Integer(0);
  return true;
}

}  // namespace kvcg::server::cmd
