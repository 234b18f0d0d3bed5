// Encoding and decoding of kvcg's persistence files; the format is described
// in log_format.h and docs/PERSISTENCE.md.
#include "durability/log_format.h"

#include <chrono>
#include <cstring>

#define XXH_INLINE_ALL  // header-only, as in common/hash.cc
#include "xxhash.h"

namespace kvcg::durability {

namespace {
void PutU32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);  // the formats are little-endian, as is every target we build for
  out->append(b, 4);
}
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint64_t HeaderSeed(const char* header) { return XXH3_64bits(header, 16); }
}  // namespace

std::string FileHeader(const char (&magic)[8], uint64_t created_ms) {
  std::string h(magic, 8);
  PutU32(&h, kFormatVersion);
  PutU32(&h, 0);
  if (created_ms == 0) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    created_ms = uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
  }
  PutU64(&h, created_ms);
  PutU64(&h, 0);
  return h;
}

void PutVarint(std::string* out, uint64_t v) {
  char b[10];
  size_t n = 0;
  while (v >= 0x80) {
    b[n++] = char((v & 0x7F) | 0x80);
    v >>= 7;
  }
  b[n++] = char(v);
  out->append(b, n);
}

void PutU64(std::string* out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}

void AppendLogRecord(std::string* out, const Batch& batch, size_t i) {
  const OpType type = batch.type(i);
  const std::string_view key = batch.key(i);
  const uint64_t expire_at = batch.expire_at(i);
  switch (type) {
    case OpType::kPut:
      out->push_back(char(expire_at == kNoExpiry ? RecordType::kPut : RecordType::kPutExpire));
      PutVarint(out, key.size());
      out->append(key);
      PutVarint(out, batch.value(i).size());
      out->append(batch.value(i));
      if (expire_at != kNoExpiry) PutVarint(out, expire_at);
      break;
    case OpType::kExpire:
      out->push_back(char(RecordType::kExpire));
      PutVarint(out, key.size());
      out->append(key);
      PutVarint(out, expire_at);
      out->push_back(char(batch.condition(i)));
      break;
    case OpType::kDelete:
      out->push_back(char(RecordType::kDelete));
      PutVarint(out, key.size());
      out->append(key);
      break;
    case OpType::kCompareAndSwap: {
      out->push_back(char(expire_at == kNoExpiry ? RecordType::kCas : RecordType::kCasExpire));
      PutVarint(out, key.size());
      out->append(key);
      const bool absent = batch.expect_absent(i);
      out->push_back(char(absent ? 1 : 0));
      if (!absent) {
        PutVarint(out, batch.expected(i).size());
        out->append(batch.expected(i));
      }
      PutVarint(out, batch.value(i).size());
      out->append(batch.value(i));
      if (expire_at != kNoExpiry) PutVarint(out, expire_at);
      break;
    }
    case OpType::kGet:
    case OpType::kNoop:
      break;  // reads and masked ops change nothing: not logged
  }
}

void AppendClearRecord(std::string* out) { out->push_back(char(RecordType::kClear)); }

void AppendTimeRecord(std::string* out, uint64_t now_ms) {
  out->push_back(char(RecordType::kTime));
  PutU64(out, now_ms);
}

void AppendSnapshotEntry(std::string* out, std::string_view key, std::string_view value,
                         uint64_t expire_at) {
  PutVarint(out, key.size());
  out->append(key);
  PutVarint(out, value.size());
  out->append(value);
  PutVarint(out, expire_at);
}

void AppendFrame(std::string* out, FrameKind kind, uint32_t records, std::string_view payload) {
  const size_t at = out->size();
  PutU32(out, kFrameMagic);
  PutU32(out, uint32_t(payload.size()));
  PutU32(out, records);
  const uint16_t k = uint16_t(kind);
  out->append(reinterpret_cast<const char*>(&k), 2);
  const uint16_t check = uint16_t(XXH3_64bits(out->data() + at, 14));
  out->append(reinterpret_cast<const char*>(&check), 2);
  const uint64_t sum = XXH3_64bits_withSeed(payload.data(), payload.size(), HeaderSeed(out->data() + at));
  PutU64(out, sum);
  out->append(payload);
}

FrameHeader ParseFrameHeader(const char* p) {
  FrameHeader h;
  h.magic = GetU32(p);
  h.payload_bytes = GetU32(p + 4);
  h.records = GetU32(p + 8);
  uint16_t kind, check;
  std::memcpy(&kind, p + 12, 2);
  std::memcpy(&check, p + 14, 2);
  h.kind = kind;
  h.header_ok = check == uint16_t(XXH3_64bits(p, 14));
  h.checksum = GetU64(p + 16);
  return h;
}

bool FrameChecksumOk(const char* header, std::string_view payload) {
  return XXH3_64bits_withSeed(payload.data(), payload.size(), HeaderSeed(header)) ==
         GetU64(header + 16);
}

bool RecordReader::Varint(uint64_t* v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ == end_) return false;
    const uint8_t b = uint8_t(*p_++);
    x |= uint64_t(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      *v = x;
      return true;
    }
  }
  return false;
}

bool RecordReader::Bytes(std::string_view* out) {
  uint64_t n;
  if (!Varint(&n) || n > uint64_t(end_ - p_)) return false;
  *out = std::string_view(p_, size_t(n));
  p_ += n;
  return true;
}

bool RecordReader::NextLogRecord(LogRecord* r) {
  if (p_ == end_) return false;
  const uint8_t type = uint8_t(*p_++);
  r->value = r->expected = {};
  r->expect_absent = false;
  r->expire_at = kNoExpiry;
  r->condition = ExpireCondition::kAlways;
  switch (RecordType(type)) {
    case RecordType::kPut:
      r->type = RecordType::kPut;
      return Bytes(&r->key) && Bytes(&r->value);
    case RecordType::kPutExpire:
      r->type = RecordType::kPut;
      return Bytes(&r->key) && Bytes(&r->value) && Varint(&r->expire_at);
    case RecordType::kExpire: {
      r->type = RecordType::kExpire;
      if (!Bytes(&r->key) || !Varint(&r->expire_at) || p_ == end_) return false;
      const uint8_t c = uint8_t(*p_++);
      if (c > uint8_t(ExpireCondition::kIfLess)) return false;
      r->condition = ExpireCondition(c);
      return true;
    }
    case RecordType::kTime:
      r->type = RecordType::kTime;
      r->key = {};
      if (end_ - p_ < 8) return false;
      r->time = GetU64(p_);
      p_ += 8;
      return true;
    case RecordType::kDelete:
      r->type = RecordType::kDelete;
      return Bytes(&r->key);
    case RecordType::kCas:
    case RecordType::kCasExpire:
      r->type = RecordType::kCas;
      if (!Bytes(&r->key) || p_ == end_) return false;
      r->expect_absent = *p_++ != 0;
      if (!r->expect_absent && !Bytes(&r->expected)) return false;
      if (!Bytes(&r->value)) return false;
      return RecordType(type) == RecordType::kCas || Varint(&r->expire_at);
    case RecordType::kClear:
      r->type = RecordType::kClear;
      r->key = {};
      return true;
  }
  return false;
}

bool RecordReader::NextSnapshotEntry(std::string_view* key, std::string_view* value,
                                     uint64_t* expire_at, uint32_t version) {
  *expire_at = kNoExpiry;
  if (!Bytes(key) || !Bytes(value)) return false;
  return version < 2 || Varint(expire_at);
}

}  // namespace kvcg::durability
