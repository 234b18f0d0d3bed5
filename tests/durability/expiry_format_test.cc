// Log format version 2 (log_format.h): PUT/CAS with an expire-at, EXPIRE and
// TIME records round-trip; snapshot entries carry their expire-at; files
// written by version 1 (no expiry, version 1 in the header) still load, and
// a version from the future is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "durability/frame_file.h"
#include "durability/log_format.h"
#include "durability/snapshot_file.h"
#include "kvcg/batch.h"
#include "kvcg/store.h"

namespace kvcg::durability {
namespace {

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("kvcg-xfmt-") + std::to_string(::getpid()) + "-" + name))
      .string();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

// A header as version 1 wrote it (the same layout, version 1).
std::string HeaderOfVersion(const char (&magic)[8], uint32_t version) {
  std::string h = FileHeader(magic);
  std::memcpy(h.data() + 8, &version, 4);
  return h;
}

TEST(ExpiryFormat, VersionTwoRecordsRoundTrip) {
  Batch b;
  b.Put("p", "pv", 1'700'000'000'123);             // type 5
  b.Put("keep", "kv", kKeepExpiry);                 // type 5, KEEPTTL
  b.Put("plain", "v");                              // type 1: no expire-at
  const std::string_view old = "old";
  b.CompareAndSwap("c", &old, "new", 42);           // type 6
  b.CompareAndSwap("c0", nullptr, "new0");          // type 3
  b.Expire("e", 1'800'000'000'000, ExpireCondition::kIfGreater);  // type 7
  std::string payload;
  for (size_t i = 0; i < b.size(); ++i) AppendLogRecord(&payload, b, i);
  AppendTimeRecord(&payload, 1'700'000'000'999);
  EXPECT_EQ(uint8_t(payload[0]), uint8_t(RecordType::kPutExpire));

  RecordReader rr(payload);
  RecordReader::LogRecord r;
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.type, RecordType::kPut);
  EXPECT_EQ(r.key, "p");
  EXPECT_EQ(r.value, "pv");
  EXPECT_EQ(r.expire_at, 1'700'000'000'123u);
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.key, "keep");
  EXPECT_EQ(r.expire_at, kKeepExpiry);
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.key, "plain");
  EXPECT_EQ(r.expire_at, kNoExpiry);
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.type, RecordType::kCas);
  EXPECT_EQ(r.key, "c");
  EXPECT_FALSE(r.expect_absent);
  EXPECT_EQ(r.expected, "old");
  EXPECT_EQ(r.value, "new");
  EXPECT_EQ(r.expire_at, 42u);
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.type, RecordType::kCas);
  EXPECT_TRUE(r.expect_absent);
  EXPECT_EQ(r.expire_at, kNoExpiry);
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.type, RecordType::kExpire);
  EXPECT_EQ(r.key, "e");
  EXPECT_EQ(r.expire_at, 1'800'000'000'000u);
  EXPECT_EQ(r.condition, ExpireCondition::kIfGreater);
  ASSERT_TRUE(rr.NextLogRecord(&r));
  EXPECT_EQ(r.type, RecordType::kTime);
  EXPECT_EQ(r.time, 1'700'000'000'999u);
  EXPECT_TRUE(rr.done());
}

TEST(ExpiryFormat, TruncatedVersionTwoRecordsAreMalformed) {
  Batch b;
  b.Expire("e", 5, ExpireCondition::kIfLess);
  std::string payload;
  AppendLogRecord(&payload, b, 0);
  std::string time;
  AppendTimeRecord(&time, 77);
  for (const std::string& whole : {payload, time}) {
    for (size_t cut = 1; cut < whole.size(); ++cut) {
      RecordReader rr(std::string_view(whole).substr(0, cut));
      RecordReader::LogRecord r;
      EXPECT_FALSE(rr.NextLogRecord(&r)) << cut;
    }
  }
  payload.back() = char(9);  // not an ExpireCondition
  RecordReader rr(payload);
  RecordReader::LogRecord r;
  EXPECT_FALSE(rr.NextLogRecord(&r));
}

TEST(ExpiryFormat, SnapshotEntriesCarryExpireAtAndVersionOneEntriesHaveNone) {
  std::string v2;
  AppendSnapshotEntry(&v2, "k", "v", 123456);
  AppendSnapshotEntry(&v2, "p", "w", kNoExpiry);
  RecordReader rr(v2);
  std::string_view k, v;
  uint64_t at = 1;
  ASSERT_TRUE(rr.NextSnapshotEntry(&k, &v, &at, 2));
  EXPECT_EQ(k, "k");
  EXPECT_EQ(at, 123456u);
  ASSERT_TRUE(rr.NextSnapshotEntry(&k, &v, &at, 2));
  EXPECT_EQ(at, kNoExpiry);
  // Version 1: key and value only.
  std::string v1;
  PutVarint(&v1, 1);
  v1 += "a";
  PutVarint(&v1, 2);
  v1 += "bc";
  RecordReader r1(v1);
  at = 7;
  ASSERT_TRUE(r1.NextSnapshotEntry(&k, &v, &at, 1));
  EXPECT_EQ(k, "a");
  EXPECT_EQ(v, "bc");
  EXPECT_EQ(at, kNoExpiry);
  EXPECT_TRUE(r1.done());
}

std::unique_ptr<Store> CpuStore() {
  Config c;
  c.backend = Backend::kCpu;
  c.expected_keys = 64;
  std::unique_ptr<Store> s;
  EXPECT_TRUE(Store::Open(c, &s).ok());
  return s;
}

TEST(ExpiryFormat, VersionOneLogAndSnapshotStillLoad) {
  // A version-1 log: header version 1, types 1-4 only.
  std::string log = HeaderOfVersion(kLogMagic, 1);
  Batch b;
  b.Put("a", "1");
  b.Put("b", "2");
  b.Delete("a");
  const std::string_view two = "2";
  b.CompareAndSwap("b", &two, "3");
  std::string rec;
  for (size_t i = 0; i < b.size(); ++i) AppendLogRecord(&rec, b, i);
  AppendFrame(&log, FrameKind::kLogRecords, uint32_t(b.size()), rec);
  const std::string log_path = TempPath("v1.log");
  WriteBytes(log_path, log);
  FrameFileReader reader;
  ASSERT_TRUE(reader.Open(log_path, kLogMagic).ok());
  EXPECT_EQ(reader.version(), 1u);
  auto store = CpuStore();
  uint64_t records = 0;
  std::string warning;
  ASSERT_TRUE(ReplayLogFile(log_path, store.get(), true, &records, &warning).ok());
  EXPECT_EQ(records, 4u);
  EXPECT_TRUE(store->Get("a").code == Code::kNotFound);
  OpResult r = store->Get("b");
  EXPECT_EQ(r.value, "3");
  EXPECT_EQ(r.expire_at, kNoExpiry);

  // A version-1 snapshot: entries without expire-at.
  std::string snap = HeaderOfVersion(kSnapshotMagic, 1);
  std::string entries;
  for (const char* k : {"x", "y"}) {
    PutVarint(&entries, 1);
    entries += k;
    PutVarint(&entries, 3);
    entries += "val";
  }
  AppendFrame(&snap, FrameKind::kSnapshotEntries, 2, entries);
  std::string end;
  PutU64(&end, 2);
  AppendFrame(&snap, FrameKind::kEnd, 0, end);
  const std::string snap_path = TempPath("v1.snap");
  WriteBytes(snap_path, snap);
  auto store2 = CpuStore();
  uint64_t keys = 0;
  Status s = LoadSnapshotFile(snap_path, store2.get(), &keys);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(keys, 2u);
  EXPECT_EQ(store2->Get("y").value, "val");

  // A version from the future is refused, naming the versions read.
  WriteBytes(log_path, HeaderOfVersion(kLogMagic, 3));
  FrameFileReader future;
  s = future.Open(log_path, kLogMagic);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find("format version 3"), std::string::npos) << s.ToString();
  std::filesystem::remove(log_path);
  std::filesystem::remove(snap_path);
}

}  // namespace
}  // namespace kvcg::durability
