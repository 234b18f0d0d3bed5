// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
// common subsequence of two string values (Redis 7.0).
//
// Both values are read in one store batch (two GETs: each read is
// linearizable, the pair is not a snapshot — as MGET), then the classic
// dynamic-programming table is built and walked back, exactly as Redis's
// lcsCommand does, so the subsequence chosen among equal-length ones and
// the match ranges IDX reports (their order, their split points) are the
// same as Redis's. A missing key is an empty string.
//
// Cost: the table is (len1 + 1) * (len2 + 1) 32-bit cells, built on the
// connection's I/O thread, which serves nothing else meanwhile (Redis
// blocks the whole server). As in Redis, a table over proto-max-bulk-len
// bytes is refused rather than allocated.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "server/cmd_common.h"
#include "server/cmd_types.h"
#include "server/command_table.h"
#include "server/connection.h"
#include "server/io_thread.h"
#include "server/resp_parser.h"

namespace kvcg::server::cmd {

namespace {

struct LcsOptions {
  bool len = false;
  bool idx = false;
  bool withmatchlen = false;
  int64_t minmatchlen = 0;
};

// Redis's option loop: the first bad option answers (syntax error, or the
// MINMATCHLEN integer error); then LEN with IDX is refused.
bool ParseLcsOptions(CommandContext& ctx, LcsOptions* o) {
  for (size_t j = 3; j < ctx.argc(); ++j) {
    std::string_view opt = ctx.arg(j);
    bool more = j + 1 < ctx.argc();
    if (EqualsIgnoreCase(opt, "idx")) {
      o->idx = true;
    } else if (EqualsIgnoreCase(opt, "len")) {
      o->len = true;
    } else if (EqualsIgnoreCase(opt, "withmatchlen")) {
      o->withmatchlen = true;
    } else if (EqualsIgnoreCase(opt, "minmatchlen") && more) {
      if (!ParseInt64(ctx.arg(j + 1), &o->minmatchlen)) {
        ctx.Error(kErrNotInteger);
        return false;
      }
      if (o->minmatchlen < 0) o->minmatchlen = 0;
      ++j;
    } else {
      ctx.Error(kErrSyntax);
      return false;
    }
  }
  if (o->idx && o->len) {
    ctx.Error("ERR If you want both the length and indexes, please just use IDX.");
    return false;
  }
  return true;
}

// One match range of IDX, written in Redis's shape.
void WriteRange(RespWriter& out, uint32_t a_start, uint32_t a_end, uint32_t b_start, uint32_t b_end, bool withlen) {
  out.ArrayHeader(withlen ? 3 : 2);
  out.ArrayHeader(2);
  out.Integer(a_start);
  out.Integer(a_end);
  out.ArrayHeader(2);
  out.Integer(b_start);
  out.Integer(b_end);
  if (withlen) out.Integer(static_cast<int64_t>(a_end) - a_start + 1);
}

}  // namespace

void Lcs(CommandContext& ctx) {
  // Redis 7.0 looks both keys up before it parses the options.
  if (HoldsCollection(ctx, ctx.arg(1)) || HoldsCollection(ctx, ctx.arg(2))) {
    return ctx.Error("ERR The specified keys must hold string values");
  }
  LcsOptions o;
  if (!ParseLcsOptions(ctx, &o)) return;  // nothing depends on the values yet
  ctx.OpGet(ctx.arg(1));
  ctx.OpGet(ctx.arg(2));
}

bool LcsFinish(CommandContext& ctx, ResultSpan r) {
  for (OpResultView x : r) {
    if (!x.succeeded()) {
      ctx.StoreError(x);
      return true;
    }
  }
  CountKeyspaceHit(ctx, r[0]);
  CountKeyspaceHit(ctx, r[1]);
  LcsOptions o;
  ParseLcsOptions(ctx, &o);  // validated in Lcs
  const std::string_view a = r[0].value, b = r[1].value;  // "" when missing
  if (a.size() >= UINT32_MAX - 1 || b.size() >= UINT32_MAX - 1) {
    ctx.Error("ERR String too long for LCS");
    return true;
  }
  const uint32_t alen = static_cast<uint32_t>(a.size()), blen = static_cast<uint32_t>(b.size());
  const uint64_t cells = (static_cast<uint64_t>(alen) + 1) * (static_cast<uint64_t>(blen) + 1);
  if (cells * sizeof(uint32_t) > ctx.loop.settings().proto_max_bulk_len) {
    ctx.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    return true;
  }
  std::unique_ptr<uint32_t[]> table(new (std::nothrow) uint32_t[cells]);
  if (!table) {
    ctx.Error("ERR Insufficient memory, failed allocating transient memory for LCS");
    return true;
  }
  // lcs(i, j): LCS length of a[0, i) and b[0, j).
  auto lcs = [&](uint32_t i, uint32_t j) -> uint32_t& { return table[j + static_cast<uint64_t>(i) * (blen + 1)]; };
  for (uint32_t i = 0; i <= alen; ++i) {
    for (uint32_t j = 0; j <= blen; ++j) {
      if (i == 0 || j == 0) lcs(i, j) = 0;
      else if (a[i - 1] == b[j - 1]) lcs(i, j) = lcs(i - 1, j - 1) + 1;
      else lcs(i, j) = std::max(lcs(i - 1, j), lcs(i, j - 1));
    }
  }
  const uint32_t total = lcs(alen, blen);
  if (o.len) {
    ctx.out.Integer(total);
    return true;
  }

  // Walk back from (alen, blen), collecting the subsequence from its end
  // and, for IDX, the ranges of contiguous matches (Redis's order: from the
  // end of the strings). The IDX array's length is known only at the end,
  // so its elements go to a side buffer first.
  std::string subsequence(total, '\0');
  std::string ranges;
  RespWriter range_out(&ranges, ctx.out.resp3());
  size_t range_count = 0;
  uint32_t idx = total;
  uint32_t a_start = alen, a_end = 0, b_start = 0, b_end = 0;  // a_start == alen: no open range
  uint32_t i = alen, j = blen;
  while (i > 0 && j > 0) {
    bool emit = false;
    if (a[i - 1] == b[j - 1]) {
      subsequence[idx - 1] = a[i - 1];
      if (a_start == alen) {
        a_start = a_end = i - 1;
        b_start = b_end = j - 1;
      } else if (a_start == i && b_start == j) {
        --a_start;  // extends the open range backwards
        --b_start;
      } else {
        emit = true;
      }
      if (a_start == 0 || b_start == 0) emit = true;  // reached the start of a string
      --idx;
      --i;
      --j;
    } else {
      if (lcs(i - 1, j) > lcs(i, j - 1)) --i;
      else --j;
      if (a_start != alen) emit = true;
    }
    if (emit) {
      uint32_t match_len = a_end - a_start + 1;
      if (o.idx && (o.minmatchlen == 0 || match_len >= static_cast<uint64_t>(o.minmatchlen))) {
        WriteRange(range_out, a_start, a_end, b_start, b_end, o.withmatchlen);
        ++range_count;
      }
      a_start = alen;
    }
  }
  if (o.idx) {
    ctx.out.MapHeader(2);
    ctx.out.Bulk("matches");
    ctx.out.ArrayHeader(range_count);
    ctx.out.Raw(ranges);
    ctx.out.Bulk("len");
    ctx.out.Integer(total);
  } else {
    ctx.out.Bulk(subsequence);
  }
  return true;
}

}  // namespace kvcg::server::cmd
