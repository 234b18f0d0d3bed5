// The byte format shared by kvcg's persistence files (docs/PERSISTENCE.md).
//
// Every file is a 32-byte file header followed by frames. A frame is a
// 24-byte header and a payload of whole records:
//
//   file header:  magic[8] ("KVCGLOG\0" log, "KVCGSNP\0" snapshot)
//                 u32 version (2; 1 is still read), u32 flags (0),
//                 u64 created (ms by the store's clock; for a snapshot the
//                 instant its image was taken, which a load replays at), u64 0
//   frame header: u32 magic 0x4B564652 ("RFVK" on disk), u32 payload bytes,
//                 u32 records, u16 kind, u16 header check, u64 checksum
//   header check = low 16 bits of XXH3-64 of the header's first 14 bytes, so
//                 a damaged length is told from a frame cut short by a crash
//   checksum   =  XXH3-64 of the payload, seeded with the header's first
//                 16 bytes
//
// Records (little-endian, lengths as LEB128 varints):
//   log:      u8 type (1 PUT, 2 DELETE, 3 CAS, 4 CLEAR, and from version 2:
//             5 PUT with expire-at, 6 CAS with expire-at, 7 EXPIRE, 8 TIME),
//             varint key length, key (not TIME, CLEAR); PUT: varint value
//             length, value; CAS: u8 expect_absent, [varint expected length,
//             expected unless absent], varint value length, value; types 5
//             and 6 are 1 and 3 followed by varint expire-at (kKeepExpiry
//             included); EXPIRE: varint expire-at, u8 condition; TIME: u64
//             ms by the store's clock when the records after it (up to the
//             next TIME) were submitted. Ops without an expire-at keep their
//             version-1 types, so a log without expiry is still version-1
//             records.
//   snapshot: varint key length, key, varint value length, value, and from
//             version 2: varint expire-at (0 = none)
//
// Replay and the clock. Expiry makes an op's effect depend on the time it
// ran (a CAS on a key that had expired meanwhile finds nothing). The log
// records each op's absolute expire-at and, in TIME records, the clock at
// which ops ran; a replay runs the store on a frozen clock
// (replay_clock.h) set from the snapshot's created time and each TIME
// record, so it expires exactly what had expired (never resurrecting a key,
// never dropping a live one), and live keys keep their absolute expire-at.
// A snapshot ends with a kEnd frame whose payload is the u64 entry count, so
// a snapshot cut short is damaged, not silently smaller.
//
// Why frames: a record is never split across frames, so a crash in the
// middle of a write leaves at most one incomplete frame at the end of a log
// (torn, and cut off at load) while damage anywhere else is detected by a
// checksum and reported with its offset. Why our own format rather than
// Redis's RDB: a chunk is a column of records that loads with one Batch per
// frame straight into the GPU path, the checksum is per frame (so a load
// need not read a whole file before trusting any of it), and the same
// framing serves the log and the snapshot; RDB's per-key type encodings and
// whole-file CRC64 buy nothing for string keys. A converter can come later.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kvcg/batch.h"

namespace kvcg::durability {

constexpr size_t kFileHeaderBytes = 32;
constexpr size_t kFrameHeaderBytes = 24;
constexpr uint32_t kFormatVersion = 2;      // written
constexpr uint32_t kOldestFormatVersion = 1;  // still read
constexpr uint32_t kFrameMagic = 0x4B564652;
constexpr char kLogMagic[8] = {'K', 'V', 'C', 'G', 'L', 'O', 'G', '\0'};
constexpr char kSnapshotMagic[8] = {'K', 'V', 'C', 'G', 'S', 'N', 'P', '\0'};
// A frame's payload never exceeds this (a larger record is rejected at load).
constexpr uint32_t kMaxFramePayload = 0x7FFFFFFF;

enum class FrameKind : uint32_t { kLogRecords = 1, kSnapshotEntries = 2, kEnd = 3 };
enum class RecordType : uint8_t {
  kPut = 1,
  kDelete = 2,
  kCas = 3,
  kClear = 4,
  kPutExpire = 5,  // version 2 on
  kCasExpire = 6,
  kExpire = 7,
  kTime = 8,
};

// The 32-byte header of a new file with the given magic.
// `created_ms` 0: the system clock now.
std::string FileHeader(const char (&magic)[8], uint64_t created_ms = 0);

// Appends a varint / fixed little-endian words to *out.
void PutVarint(std::string* out, uint64_t v);
void PutU64(std::string* out, uint64_t v);

// Appends one log record for op i of `batch` (PUT, DELETE, CAS or EXPIRE;
// PUT and CAS with an expire-at as types 5 and 6).
void AppendLogRecord(std::string* out, const Batch& batch, size_t i);
void AppendClearRecord(std::string* out);
void AppendTimeRecord(std::string* out, uint64_t now_ms);
// Appends one (version 2) snapshot entry.
void AppendSnapshotEntry(std::string* out, std::string_view key, std::string_view value,
                         uint64_t expire_at);

// Appends a frame (header + payload) to *out.
void AppendFrame(std::string* out, FrameKind kind, uint32_t records, std::string_view payload);

// A parsed frame header.
struct FrameHeader {
  uint32_t magic = 0;
  uint32_t payload_bytes = 0;
  uint32_t records = 0;
  uint32_t kind = 0;
  bool header_ok = false;  // the header check matched
  uint64_t checksum = 0;
};
FrameHeader ParseFrameHeader(const char* p);
bool FrameChecksumOk(const char* header, std::string_view payload);

// Reads records out of a frame's payload. Every Next* returns false on
// malformed bytes (a record running past the payload, a bad type).
class RecordReader {
 public:
  explicit RecordReader(std::string_view payload) : p_(payload.data()), end_(p_ + payload.size()) {}
  bool done() const { return p_ == end_; }

  struct LogRecord {
    RecordType type;
    std::string_view key, value, expected;
    bool expect_absent = false;
    uint64_t expire_at = kNoExpiry;  // PUT/CAS (kPut/kCas: none), EXPIRE
    ExpireCondition condition = ExpireCondition::kAlways;  // EXPIRE
    uint64_t time = 0;                                     // TIME
  };
  bool NextLogRecord(LogRecord* r);
  // `version` is the file's (a version-1 entry has no expire-at: 0).
  bool NextSnapshotEntry(std::string_view* key, std::string_view* value, uint64_t* expire_at,
                         uint32_t version = kFormatVersion);

 private:
  bool Varint(uint64_t* v);
  bool Bytes(std::string_view* out);
  const char* p_;
  const char* end_;
};

}  // namespace kvcg::durability
