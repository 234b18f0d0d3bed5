// Keyspace commands: TYPE, TOUCH, RENAME, RENAMENX, COPY, OBJECT, MEMORY,
// SWAPDB, KEYS, RANDOMKEY (DEL/EXISTS/UNLINK: cmd_strings.cc; SELECT:
// cmd_connection.cc; DBSIZE/FLUSH*: cmd_server.cc).
//
// One database. kvcg keeps a single keyspace (`databases` is 1): SELECT 0,
// SWAPDB 0 0 and COPY ... DB 0 are accepted, any other index gets Redis's
// "ERR DB index is out of range". Numbered databases would need a key
// prefix per database in the store, and DBSIZE/FLUSHDB/KEYS per database
// would then cost a scan; no client we target needs them.
//
// Per-key reads. TYPE, OBJECT and MEMORY USAGE are one store GET: all values
// in the store are strings, so the answer follows from whether the key
// exists and, for OBJECT ENCODING and MEMORY USAGE, from the value's bytes
// (the GET brings the whole value back; fine for these diagnostic commands).
// A key holding a list or set (collections.h) is answered from the server's
// CollectionKeyspace instead: TYPE "list"/"set", OBJECT ENCODING
// "quicklist"/"hashtable" (Redis 7.0's encodings of a list and of a set of
// strings), REFCOUNT 1, MEMORY USAGE the keyspace's estimate.
//
// Lists and sets are not moved: RENAME/RENAMENX/COPY of a list or set
// answer kErrMoveCollection (their source would have to move between the
// collection keyspace and the store, with the same windows as
// collections.h describes, for a use no client we target has). As a
// destination, a list or set is replaced by RENAME and COPY ... REPLACE and
// counts as existing for RENAMENX and COPY, as in Redis.
//
// RENAME / RENAMENX / COPY are built from the store's per-key GET, PUT,
// DELETE and CAS; the store has no multi-key transaction and no conditional
// delete, so they are NOT atomic across their two keys. What they guarantee
// (docs/COMMANDS.md repeats it):
//   RENAME src dst, in rounds, each waiting for the previous:
//     1. GET src                  absent: "ERR no such key"
//     2. PUT dst = v              (RENAMENX: CAS dst absent -> v; if dst
//                                  exists, answer 0: nothing changed)
//     3. DELETE src -> p          p == v: done.
//     4a. p != v (another client rewrote src after 1): CAS dst v -> p, so
//        dst ends with the value src held when it was deleted (unless dst
//        was rewritten after 2: that write then comes after the rename).
//     4b. p absent (another client removed src after 1 — a concurrent
//        RENAME, DEL, GETDEL): that client got the source, so this RENAME
//        did not happen: undo step 2 (CAS dst v -> dst's previous value, or
//        DELETE dst when it had none, putting back a value another client
//        wrote meanwhile) and answer "ERR no such key".
//   * The source is taken by exactly one command: of concurrent RENAMEs of
//     one key, one succeeds and the others answer "ERR no such key", as in
//     Redis (so RENAMENX/RENAME still work as a claim).
//   * The copy is written before the source is removed: a crash mid-way
//     leaves the value under both names, never under neither; other clients
//     may see it under both names while a RENAME runs, and may briefly see
//     the copy in dst of a RENAME that is then undone (4b).
//   * dst is replaced by one PUT: a reader of dst sees the old or the new
//     value, never a missing key (the "write tmp, RENAME tmp key" pattern).
//   * A store error (OOM, key too large, a log write error) at step 2
//     changes nothing; later it is answered as the error and may leave the
//     value under both names.
//   COPY src dst: GET src, then PUT dst (REPLACE) or CAS dst absent -> v:
//   dst gets the value src held at the GET.
// The connection orders its own later commands on src and dst after the
// whole command (the commands are kCmdRmw: see connection.h), so a pipeline
// "RENAME a b; GET b" behaves as in Redis. The extra rounds are counted in
// INFO's rmw_extra_rounds like CAS retries.
//
// KEYS and RANDOMKEY read a point-in-time image of the whole store
// (Store::OpenSnapshot, kvcg/snapshot.h) on the connection's I/O thread:
// O(N) in the number of keys, as in Redis, and while the scan runs that I/O
// thread serves no other client (other I/O threads keep serving; on the GPU
// backend opening the image also pauses the store's pipeline while its index
// is copied). They are barriers (kCmdBarrier): the image holds every earlier
// command of the same connection. RANDOMKEY picks a uniform index into the
// image and reads up to it. Fine for tools and tests; a production client
// should not call them on a big store (the same advice as for Redis's KEYS).
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvcg/snapshot.h"
#include "kvcg/store.h"
#include "server/cmd_common.h"
#include "server/cmd_object.h"
#include "server/cmd_types.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/glob.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"
#include "server/server.h"
#include "store/cpu/cpu_store.h"

namespace kvcg::server::cmd {

namespace {

constexpr const char* kErrNoSuchKey = "ERR no such key";
constexpr const char* kErrMoveCollection = "ERR kvcg: RENAME, RENAMENX and COPY do not move lists or sets";

// Lists and sets of the collection keyspace (not in the store's image) for
// KEYS and RANDOMKEY; empty without one (one atomic load).
std::vector<std::pair<std::string, CollectionType>> CollectionKeys(CommandContext& ctx) {
  CollectionKeyspace& c = ctx.server.collections();
  if (!c.active()) return {};
  return c.Keys();
}

void HelpReply(CommandContext& ctx, std::initializer_list<const char*> lines) {
  ctx.out.ArrayHeader(lines.size());
  for (const char* l : lines) ctx.out.SimpleString(l);
}

void SubcommandArity(CommandContext& ctx, std::string_view container, std::string_view sub) {
  ctx.Error("ERR wrong number of arguments for '" + std::string(container) + "|" + std::string(sub) + "' command");
}

void UnknownSubcommand(CommandContext& ctx, std::string_view container_upper) {
  ctx.Error("ERR unknown subcommand '" + std::string(ctx.arg(1).substr(0, 128)) + "'. Try " +
            std::string(container_upper) + " HELP.");
}

// Redis's shared integers (OBJ_SHARED_INTEGERS): with maxmemory-policy
// noeviction, values 0..9999 stored by SET are one shared object.
constexpr int64_t kSharedIntegers = 10000;
constexpr int64_t kSharedRefcount = INT_MAX;  // OBJ_SHARED_REFCOUNT

// What Redis 7.0's OBJECT ENCODING reports for a string value SET stored
// (tryObjectEncoding): "int" for a strict 64-bit decimal of at most 20
// characters, "embstr" up to 44 bytes, "raw" above. Redis also keeps "raw"
// for a short value grown by APPEND/SETRANGE; kvcg does not remember how a
// value was written, so it answers from the bytes alone.
const char* EncodingOf(std::string_view v, int64_t* as_int) {
  if (v.size() <= 20 && ParseInt64(v, as_int)) return "int";
  return v.size() <= 44 ? "embstr" : "raw";
}

// Bytes a backend charges against maxmemory per entry beyond its key and
// value: CpuStore::kEntryOverhead on the CPU backend; the GPU backend's slab
// records charge 48 (general layout) or 16 (fixed8) — GpuStore's
// entry_overhead, set in gpu_store.cc.
uint64_t EntryOverhead(const StoreInfo& info) {
  if (info.backend == Backend::kCpu) return store::cpu::CpuStore::kEntryOverhead;
  return info.layout == Layout::kFixed8 ? 16 : 48;
}

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

// Opens the store's image, or replies with the error and returns null.
std::unique_ptr<SnapshotReader> OpenImage(CommandContext& ctx) {
  std::unique_ptr<SnapshotReader> image;
  Status s = ctx.server.store()->OpenSnapshot(&image);
  if (!s.ok()) {
    ctx.Error("ERR cannot read the keyspace: " + s.ToString());
    return nullptr;
  }
  return image;
}

enum RenameStep : uint8_t {
  kReadSource,
  kWriteDest,
  kDeleteSource,
  kMoveLateValue,
  kUndoRestore,
  kUndoDelete,
  kUndoPutBack,
  kHadDest = 0x80,  // flag: step 2 replaced a value of dst (kept after v in scratch)
};
void RenameDone(CommandContext& ctx) {
  if (std::string_view(ctx.cmd.spec->name) == "renamenx") ctx.out.Integer(1);
  else ctx.out.Ok();
}

enum ObjectSub : int64_t { kEncoding, kRefcount, kFreq, kIdletime };

}  // namespace

// --- TYPE key: every value is a string.
void Type(CommandContext& ctx) {
  CollectionKeyspace& c = ctx.server.collections();
  if (c.active()) {
    if (CollectionType t = c.TypeOf(ctx.arg(1)); t != CollectionType::kNone) return ctx.out.SimpleString(CollectionTypeName(t));
  }
  ctx.OpGet(ctx.arg(1));
}
bool TypeFinish(CommandContext& ctx, ResultSpan r) {
  if (r[0].found()) ctx.out.SimpleString("string");
  else if (r[0].code == Code::kNotFound) ctx.out.SimpleString("none");
  else ctx.StoreError(r[0]);
  return true;
}

// --- RENAME / RENAMENX key newkey (see the top comment for the guarantee).
// cmd.phase: the step (RenameStep) | kHadDest once step 2 replaced a value;
// cmd.scratch: v (the value read in step 1), then dst's replaced value;
// cmd.i64: v's length; cmd.expire_at: v's expire-at, then dst's replaced
// value's (restored with it by an undo).
void Rename(CommandContext& ctx) {
  if (HoldsCollection(ctx, ctx.arg(1))) return ctx.Error(kErrMoveCollection);
  ctx.cmd.phase = kReadSource;
  ctx.OpGet(ctx.arg(1));
}

bool RenameFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  const bool nx = std::string_view(ctx.cmd.spec->name) == "renamenx";
  std::string_view src = ctx.arg(1), dst = ctx.arg(2);
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  const bool had_dest = ctx.cmd.phase & kHadDest;
  std::string_view copied = std::string_view(ctx.cmd.scratch).substr(0, static_cast<size_t>(ctx.cmd.i64));
  std::string_view replaced = std::string_view(ctx.cmd.scratch).substr(copied.size());
  switch (ctx.cmd.phase & ~kHadDest) {
    case kReadSource:
      if (!res.found()) {
        ctx.Error(kErrNoSuchKey);
        return true;
      }
      if (src == dst) {  // Redis: nothing to do, but the key must exist
        if (nx) ctx.out.Integer(0);
        else ctx.out.Ok();
        return true;
      }
      if (HoldsCollection(ctx, dst)) {  // a list or set at dst: RENAMENX finds it, RENAME replaces it
        if (nx) {
          ctx.out.Integer(0);
          return true;
        }
        DropCollection(ctx, dst);
      }
      ctx.cmd.scratch.assign(res.value);
      ctx.cmd.i64 = static_cast<int64_t>(res.value.size());
      ctx.cmd.expire_at[0] = res.expire_at;  // the TTL moves with the value, as in Redis
      ctx.cmd.phase = kWriteDest;
      if (nx) ctx.OpCas(dst, nullptr, ctx.cmd.scratch, res.expire_at);
      else ctx.OpPut(dst, ctx.cmd.scratch, res.expire_at);
      return false;
    case kWriteDest:
      if (nx && res.found()) {  // the CAS found dst present: nothing changed
        ctx.out.Integer(0);
        return true;
      }
      ctx.cmd.phase = kDeleteSource;
      if (res.found()) {  // PUT replaced a value: kept in case step 3 must undo
        ctx.cmd.scratch.append(res.value);
        ctx.cmd.expire_at[1] = res.expire_at;
        ctx.cmd.phase |= kHadDest;
      }
      ctx.OpDelete(src);
      return false;
    case kDeleteSource:
      if (!res.found()) {
        // Another client removed src after step 1 (a concurrent RENAME, DEL,
        // GETDEL): it got the source, this RENAME did not happen. Undo step 2.
        if (had_dest) {
          ctx.cmd.phase = kUndoRestore;
          ctx.OpCas(dst, &copied, replaced, ctx.cmd.expire_at[1]);
        } else {
          ctx.cmd.phase = kUndoDelete;
          ctx.OpDelete(dst);
        }
        return false;
      }
      if (res.value != copied) {
        // src was rewritten after step 1 and that value is now only here:
        // it replaces the copy in dst, unless dst changed since step 2.
        ctx.cmd.phase = kMoveLateValue;
        ctx.OpCas(dst, &copied, res.value, res.expire_at);
        return false;
      }
      RenameDone(ctx);
      return true;
    case kMoveLateValue:
      RenameDone(ctx);
      return true;
    case kUndoDelete:
      if (res.found() && res.value != copied) {
        // Another client wrote dst after step 2 and the DELETE took it: put it back.
        ctx.cmd.phase = kUndoPutBack;
        ctx.OpCas(dst, nullptr, res.value, res.expire_at);
        return false;
      }
      ctx.Error(kErrNoSuchKey);
      return true;
    default:  // kUndoRestore, kUndoPutBack
      ctx.Error(kErrNoSuchKey);
      return true;
  }
}

// --- COPY source destination [DB destination-db] [REPLACE]
void Copy(CommandContext& ctx) {
  bool replace = false;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    if (EqualsIgnoreCase(ctx.arg(i), "replace")) {
      replace = true;
    } else if (EqualsIgnoreCase(ctx.arg(i), "db") && i + 1 < ctx.argc()) {
      int db;
      const char* error;
      if (!ParseIntArg(ctx.arg(i + 1), &db, &error)) {
        ctx.Error(error);
        return;
      }
      if (db != 0) {
        ctx.Error(kErrDbRange);
        return;
      }
      ++i;
    } else {
      ctx.Error(kErrSyntax);
      return;
    }
  }
  if (ctx.arg(1) == ctx.arg(2)) {
    ctx.Error("ERR source and destination objects are the same");
    return;
  }
  if (HoldsCollection(ctx, ctx.arg(1))) return ctx.Error(kErrMoveCollection);
  ctx.cmd.i64 = replace;
  ctx.cmd.phase = 0;
  ctx.OpGet(ctx.arg(1));
}

bool CopyFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  const bool replace = ctx.cmd.i64 != 0;
  if (!res.succeeded()) {
    ctx.StoreError(res);
    return true;
  }
  if (ctx.cmd.phase == 0) {
    if (!res.found()) {
      ctx.out.Integer(0);
      return true;
    }
    if (HoldsCollection(ctx, ctx.arg(2))) {  // a list or set at the destination exists
      if (!replace) {
        ctx.out.Integer(0);
        return true;
      }
      DropCollection(ctx, ctx.arg(2));
    }
    ctx.cmd.phase = 1;
    // The batch copies the value now, while the view is still valid.
    // The copy has the source's TTL, as in Redis.
    if (replace) ctx.OpPut(ctx.arg(2), res.value, res.expire_at);
    else ctx.OpCas(ctx.arg(2), nullptr, res.value, res.expire_at);
    return false;
  }
  ctx.out.Integer(replace || !res.found() ? 1 : 0);
  return true;
}

// --- OBJECT ENCODING|REFCOUNT|FREQ|IDLETIME key, OBJECT HELP
void Object(CommandContext& ctx) {
  std::string sub = ToLower(ctx.arg(1));
  ObjectSub which;
  if (sub == "encoding") which = kEncoding;
  else if (sub == "refcount") which = kRefcount;
  else if (sub == "freq") which = kFreq;
  else if (sub == "idletime") which = kIdletime;
  else if (sub == "help") {
    if (ctx.argc() != 2) return SubcommandArity(ctx, "object", sub);
    return HelpReply(ctx, {"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "ENCODING <key>",
                           "    Return the kind of internal representation used in order to store the value",
                           "    associated with a <key>.", "FREQ <key>",
                           "    Return the access frequency index of the <key>. The returned integer is",
                           "    proportional to the logarithm of the recent access frequency of the key.",
                           "IDLETIME <key>",
                           "    Return the idle time of the <key>, that is the approximated number of",
                           "    seconds elapsed since the last access to the key.", "REFCOUNT <key>",
                           "    Return the number of references of the value associated with the specified",
                           "    <key>.", "HELP", "    Prints this help."});
  } else {
    return UnknownSubcommand(ctx, "OBJECT");
  }
  if (ctx.argc() != 3) return SubcommandArity(ctx, "object", sub);
  if (which == kFreq || which == kIdletime) return ObjectAccess(ctx, which == kFreq);  // cmd_object.cc
  if (ctx.server.collections().active()) {
    const CollectionType t = ctx.server.collections().TypeOf(ctx.arg(2));
    if (t != CollectionType::kNone) {
      if (which == kRefcount) return ctx.out.Integer(1);
      return ctx.out.Bulk(t == CollectionType::kList ? "quicklist" : "hashtable");
    }
  }
  ctx.cmd.i64 = which;
  ctx.OpGet(ctx.arg(2));
}

bool ObjectFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (!res.found()) {
    if (res.code == Code::kNotFound) ctx.out.Null();  // Redis checks the key first
    else ctx.StoreError(res);
    return true;
  }
  int64_t as_int = 0;
  const char* encoding = EncodingOf(res.value, &as_int);
  switch (ctx.cmd.i64) {
    case kEncoding:
      ctx.out.Bulk(encoding);
      break;
    case kRefcount:
      ctx.out.Integer(encoding[0] == 'i' && as_int >= 0 && as_int < kSharedIntegers ? kSharedRefcount : 1);
      break;
    default:  // FREQ and IDLETIME never get here (cmd_object.cc)
      ctx.Error("ERR internal error: OBJECT subcommand");
      break;
  }
  return true;
}

// --- MEMORY USAGE key [SAMPLES count], MEMORY PURGE, MEMORY HELP
void Memory(CommandContext& ctx) {
  std::string sub = ToLower(ctx.arg(1));
  if (sub == "usage") {
    if (ctx.argc() < 3) return SubcommandArity(ctx, "memory", sub);
    for (size_t i = 3; i < ctx.argc(); ++i) {
      int64_t samples;  // nothing nested to sample: checked as Redis does, then unused
      if (EqualsIgnoreCase(ctx.arg(i), "samples") && i + 1 < ctx.argc()) {
        if (!ParseInt64(ctx.arg(i + 1), &samples)) return ctx.Error(kErrNotInteger);
        if (samples < 0) return ctx.Error(kErrSyntax);
        ++i;
      } else {
        return ctx.Error(kErrSyntax);
      }
    }
    if (HoldsCollection(ctx, ctx.arg(2))) {
      return ctx.out.Integer(static_cast<int64_t>(ctx.server.collections().MemoryUsage(ctx.arg(2))));
    }
    ctx.OpGet(ctx.arg(2));
  } else if (sub == "purge" || sub == "help" || sub == "doctor" || sub == "stats" || sub == "malloc-stats") {
    if (ctx.argc() != 2) return SubcommandArity(ctx, "memory", sub);
    if (sub == "purge") return ctx.out.Ok();  // nothing to purge: the store owns its memory
    if (sub == "help") {
      return HelpReply(ctx, {"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "DOCTOR",
                             "    Return memory problems reports.", "MALLOC-STATS",
                             "    Return internal statistics report from the memory allocator.", "PURGE",
                             "    Attempt to purge dirty pages for reclamation by the allocator.", "STATS",
                             "    Return information about the memory usage of the server.",
                             "USAGE <key> [SAMPLES <count>]",
                             "    Return memory in bytes used by <key> and its value. Nested values are",
                             "    sampled up to <count> times (default: 5, 0 means sample all).", "HELP",
                             "    Prints this help."});
    }
    ctx.Error("ERR MEMORY " + std::string(ctx.arg(1)) +
              " is not supported by kvcg (INFO memory and INFO kvcg have the store's figures)");
  } else {
    UnknownSubcommand(ctx, "MEMORY");
  }
}

// key + value + the backend's per-entry charge: what the entry counts
// against maxmemory (store_memory_bytes in INFO kvcg), not allocator-exact.
bool MemoryFinish(CommandContext& ctx, ResultSpan r) {
  const OpResultView res = r[0];
  if (res.found()) {
    uint64_t overhead = EntryOverhead(ctx.server.store()->Info());
    ctx.out.Integer(static_cast<int64_t>(ctx.arg(2).size() + res.value.size() + overhead));
  } else if (res.code == Code::kNotFound) {
    ctx.out.Null();
  } else {
    ctx.StoreError(res);
  }
  return true;
}

// --- SWAPDB index1 index2: one database, so only "SWAPDB 0 0" (a no-op).
void SwapDb(CommandContext& ctx) {
  int a, b;
  const char* error;
  if (!ParseIntArg(ctx.arg(1), &a, &error, "ERR invalid first DB index") ||
      !ParseIntArg(ctx.arg(2), &b, &error, "ERR invalid second DB index")) {
    return ctx.Error(error);
  }
  if (a != 0 || b != 0) return ctx.Error(kErrDbRange);
  ctx.out.Ok();
}

// --- KEYS pattern
void Keys(CommandContext& ctx) {
  std::unique_ptr<SnapshotReader> image = OpenImage(ctx);
  if (!image) return;
  std::string_view pattern = ctx.arg(1);
  const bool all = pattern == "*";
  // The count is known only at the end: the elements go to a side buffer,
  // then header + elements into the reply.
  std::string elements;
  RespWriter side(&elements, ctx.out.resp3());
  size_t n = 0;
  // An expired key not yet reclaimed is not listed (Redis's KEYS skips them too).
  const uint64_t now = ctx.Now();
  SnapshotChunk chunk;
  while (image->Next(&chunk)) {
    for (size_t i = 0; i < chunk.keys.size(); ++i) {
      const std::string_view key = chunk.keys[i];
      if (i < chunk.expires.size() && IsExpired(chunk.expires[i], now)) continue;
      if (all || GlobMatch(pattern, key, false)) {
        side.Bulk(key);
        ++n;
      }
    }
  }
  if (!image->status().ok()) return ctx.Error("ERR cannot read the keyspace: " + image->status().ToString());
  for (const auto& [key, type] : CollectionKeys(ctx)) {
    if (all || GlobMatch(pattern, key, false)) {
      side.Bulk(key);
      ++n;
    }
  }
  ctx.out.ArrayHeader(n);
  ctx.out.Raw(elements);
}

// --- RANDOMKEY: a uniform pick among the image's keys that have not
// expired. How many have is known only at the end, so the pick is a
// reservoir sample of one (the k-th live key replaces the pick with
// probability 1/k): one pass, one copy per replacement.
void RandomKey(CommandContext& ctx) {
  std::unique_ptr<SnapshotReader> image = OpenImage(ctx);
  if (!image) return;
  const auto collections = CollectionKeys(ctx);
  if (image->size() == 0 && collections.empty()) return ctx.out.Null();
  const uint64_t now = ctx.Now();
  std::string pick;
  uint64_t live = 0;
  SnapshotChunk chunk;
  while (image->Next(&chunk)) {
    for (size_t i = 0; i < chunk.keys.size(); ++i) {
      if (i < chunk.expires.size() && IsExpired(chunk.expires[i], now)) continue;
      ++live;
      if (std::uniform_int_distribution<uint64_t>(0, live - 1)(Rng()) == 0) pick.assign(chunk.keys[i]);
    }
  }
  if (!image->status().ok()) return ctx.Error("ERR cannot read the keyspace: " + image->status().ToString());
  for (const auto& entry : collections) {  // the same reservoir goes on over the lists and sets
    ++live;
    if (std::uniform_int_distribution<uint64_t>(0, live - 1)(Rng()) == 0) pick = entry.first;
  }
  if (live == 0) return ctx.out.Null();
  ctx.out.Bulk(pick);
}

}  // namespace kvcg::server::cmd
