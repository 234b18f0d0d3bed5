// The persistence file format: records round-trip, frames catch damage, and a
// reader tells a torn tail from damage in the middle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "durability/frame_file.h"
#include "durability/log_format.h"
#include "kvcg/batch.h"

namespace kvcg::durability {
namespace {

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("kvcg-fmt-") + std::to_string(::getpid()) + "-" + name))
      .string();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

// A log file of `frames` frames, each holding one PUT of key "k<i>".
std::string LogWithFrames(int frames) {
  std::string file = FileHeader(kLogMagic);
  for (int i = 0; i < frames; ++i) {
    Batch b;
    b.Put("k" + std::to_string(i), std::string(100, char('a' + i % 26)));
    std::string rec;
    AppendLogRecord(&rec, b, 0);
    AppendFrame(&file, FrameKind::kLogRecords, 1, rec);
  }
  return file;
}

TEST(LogFormat, EveryRecordTypeRoundTrips) {
  Batch b;
  const std::string binary_key("a\0b", 3), big(70000, 'x');
  b.Put(binary_key, big);
  b.Delete("gone");
  const std::string_view expected = "old";
  b.CompareAndSwap("cas", &expected, "new");
  b.CompareAndSwap("fresh", nullptr, "");
  b.Get("not logged");
  std::string payload;
  for (size_t i = 0; i < b.size(); ++i) AppendLogRecord(&payload, b, i);
  AppendClearRecord(&payload);
  RecordReader r(payload);
  RecordReader::LogRecord rec;
  ASSERT_TRUE(r.NextLogRecord(&rec));
  EXPECT_EQ(rec.type, RecordType::kPut);
  EXPECT_EQ(rec.key, binary_key);
  EXPECT_EQ(rec.value, big);
  ASSERT_TRUE(r.NextLogRecord(&rec));
  EXPECT_EQ(rec.type, RecordType::kDelete);
  EXPECT_EQ(rec.key, "gone");
  ASSERT_TRUE(r.NextLogRecord(&rec));
  EXPECT_EQ(rec.type, RecordType::kCas);
  EXPECT_FALSE(rec.expect_absent);
  EXPECT_EQ(rec.expected, "old");
  EXPECT_EQ(rec.value, "new");
  ASSERT_TRUE(r.NextLogRecord(&rec));
  EXPECT_EQ(rec.type, RecordType::kCas);
  EXPECT_TRUE(rec.expect_absent);
  EXPECT_EQ(rec.key, "fresh");
  EXPECT_EQ(rec.value, "");
  ASSERT_TRUE(r.NextLogRecord(&rec));
  EXPECT_EQ(rec.type, RecordType::kClear);
  EXPECT_TRUE(r.done());
}

TEST(LogFormat, TruncatedRecordIsMalformed) {
  Batch b;
  b.Put("key", "value");
  std::string payload;
  AppendLogRecord(&payload, b, 0);
  for (size_t cut = 1; cut < payload.size(); ++cut) {
    RecordReader r(std::string_view(payload.data(), cut));
    RecordReader::LogRecord rec;
    EXPECT_FALSE(r.NextLogRecord(&rec)) << "cut at " << cut;
  }
}

TEST(FrameFile, ReadsEveryFrameThenEnd) {
  const std::string path = TempPath("all");
  WriteBytes(path, LogWithFrames(5));
  FrameFileReader reader;
  ASSERT_TRUE(reader.Open(path, kLogMagic).ok());
  FrameHeader h;
  std::string_view payload;
  for (int i = 0; i < 5; ++i) ASSERT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kFrame);
  EXPECT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kEnd);
  std::filesystem::remove(path);
}

TEST(FrameFile, EveryCutOfTheLastFrameIsTorn) {
  const std::string whole = LogWithFrames(3);
  const size_t last_frame = whole.size() - (kFrameHeaderBytes + 1 + 1 + 2 + 1 + 100);
  const std::string path = TempPath("torn");
  for (size_t cut = last_frame + 1; cut < whole.size(); cut += 7) {
    WriteBytes(path, whole.substr(0, cut));
    FrameFileReader reader;
    ASSERT_TRUE(reader.Open(path, kLogMagic).ok());
    FrameHeader h;
    std::string_view payload;
    ASSERT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kFrame);
    ASSERT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kFrame);
    EXPECT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kTorn) << "cut at " << cut;
    EXPECT_EQ(reader.offset(), last_frame);
  }
  std::filesystem::remove(path);
}

TEST(FrameFile, ZeroFilledTailIsTorn) {
  const std::string path = TempPath("zeros");
  WriteBytes(path, LogWithFrames(2) + std::string(4096, '\0'));
  FrameFileReader reader;
  ASSERT_TRUE(reader.Open(path, kLogMagic).ok());
  FrameHeader h;
  std::string_view payload;
  ASSERT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kFrame);
  ASSERT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kFrame);
  EXPECT_EQ(reader.Read(&h, &payload), FrameFileReader::Next::kTorn);
  std::filesystem::remove(path);
}

TEST(FrameFile, AFlippedByteBeforeTheLastFrameIsDamageAtItsFrame) {
  const std::string whole = LogWithFrames(4);
  const size_t frame_bytes = (whole.size() - kFileHeaderBytes) / 4;
  const std::string path = TempPath("flip");
  // Every byte of frames 0..2 (header and payload): damage, reported at the frame.
  for (size_t at = kFileHeaderBytes; at < kFileHeaderBytes + 3 * frame_bytes; at += 5) {
    std::string bad = whole;
    bad[at] ^= 0x40;
    WriteBytes(path, bad);
    FrameFileReader reader;
    ASSERT_TRUE(reader.Open(path, kLogMagic).ok());
    FrameHeader h;
    std::string_view payload;
    FrameFileReader::Next next;
    while ((next = reader.Read(&h, &payload)) == FrameFileReader::Next::kFrame) {
    }
    const size_t frame = (at - kFileHeaderBytes) / frame_bytes;
    // Even a flipped length (which makes the frame look longer than the
    // file, like a cut one) is damage: the header check catches it.
    EXPECT_EQ(next, FrameFileReader::Next::kDamaged) << at;
    EXPECT_EQ(reader.offset(), kFileHeaderBytes + frame * frame_bytes) << at;
  }
  std::filesystem::remove(path);
}

TEST(FrameFile, WrongKindOrVersionIsRefusedWithTheFileName) {
  const std::string path = TempPath("kind");
  WriteBytes(path, LogWithFrames(1));
  FrameFileReader reader;
  Status s = reader.Open(path, kSnapshotMagic);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  std::string bad = LogWithFrames(1);
  bad[8] = 9;  // version 9
  WriteBytes(path, bad);
  FrameFileReader reader2;
  s = reader2.Open(path, kLogMagic);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find("version"), std::string::npos) << s.message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvcg::durability
