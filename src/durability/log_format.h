// The byte format shared by kvcg's persistence files (docs/PERSISTENCE.md).
//
// Every file is a 32-byte file header followed by frames. A frame is a
// 24-byte header and a payload of whole records:
//
//   file header:  magic[8] ("KVCGLOG\0" log, "KVCGSNP\0" snapshot)
//                 u32 version (1), u32 flags (0), u64 created (unix ms), u64 0
//   frame header: u32 magic 0x4B564652 ("RFVK" on disk), u32 payload bytes,
//                 u32 records, u16 kind, u16 header check, u64 checksum
//   header check = low 16 bits of XXH3-64 of the header's first 14 bytes, so
//                 a damaged length is told from a frame cut short by a crash
//   checksum   =  XXH3-64 of the payload, seeded with the header's first
//                 16 bytes
//
// Records (little-endian, lengths as LEB128 varints):
//   log:      u8 type (1 PUT, 2 DELETE, 3 CAS, 4 CLEAR), varint key length,
//             key; PUT: varint value length, value; CAS: u8 expect_absent,
//             [varint expected length, expected unless absent], varint value
//             length, value
//   snapshot: varint key length, key, varint value length, value
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
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kFrameMagic = 0x4B564652;
constexpr char kLogMagic[8] = {'K', 'V', 'C', 'G', 'L', 'O', 'G', '\0'};
constexpr char kSnapshotMagic[8] = {'K', 'V', 'C', 'G', 'S', 'N', 'P', '\0'};
// A frame's payload never exceeds this (a larger record is rejected at load).
constexpr uint32_t kMaxFramePayload = 0x7FFFFFFF;

enum class FrameKind : uint32_t { kLogRecords = 1, kSnapshotEntries = 2, kEnd = 3 };
enum class RecordType : uint8_t { kPut = 1, kDelete = 2, kCas = 3, kClear = 4 };

// The 32-byte header of a new file with the given magic.
std::string FileHeader(const char (&magic)[8]);

// Appends a varint / fixed little-endian words to *out.
void PutVarint(std::string* out, uint64_t v);
void PutU64(std::string* out, uint64_t v);

// Appends one log record for op i of `batch` (PUT, DELETE or CAS).
void AppendLogRecord(std::string* out, const Batch& batch, size_t i);
void AppendClearRecord(std::string* out);
// Appends one snapshot entry.
void AppendSnapshotEntry(std::string* out, std::string_view key, std::string_view value);

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
  };
  bool NextLogRecord(LogRecord* r);
  bool NextSnapshotEntry(std::string_view* key, std::string_view* value);

 private:
  bool Varint(uint64_t* v);
  bool Bytes(std::string_view* out);
  const char* p_;
  const char* end_;
};

}  // namespace kvcg::durability
