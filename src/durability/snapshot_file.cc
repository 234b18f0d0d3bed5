// Writing and loading snapshot files; replaying log files (snapshot_file.h).
#include "durability/snapshot_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "durability/batch_loader.h"
#include "durability/frame_file.h"
#include "durability/log_format.h"
#include "durability/replay_clock.h"

namespace kvcg::durability {

namespace {
constexpr size_t kFramePayload = 1 << 20;  // entries per frame: ~1 MiB of them
constexpr size_t kWriteBuffer = 8 << 20;

std::string At(const FrameFileReader& r) { return " at offset " + std::to_string(r.offset()); }
}  // namespace

Status WriteSnapshotFile(SnapshotReader* image, const std::string& path, uint64_t* bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(tmp, errno);
  const auto* timed = dynamic_cast<const TimedSnapshot*>(image);
  std::string out = FileHeader(kSnapshotMagic, timed != nullptr ? timed->taken_at() : 0);
  std::string payload;
  uint32_t count = 0;
  uint64_t total = 0, written = 0;
  int err = 0;
  auto end_frame = [&] {
    if (count == 0) return;
    AppendFrame(&out, FrameKind::kSnapshotEntries, count, payload);
    payload.clear();
    count = 0;
    if (out.size() >= kWriteBuffer) {
      if (err == 0) err = WriteAll(fd, out);
      written += out.size();
      out.clear();
    }
  };
  SnapshotChunk chunk;
  while (err == 0 && image->Next(&chunk)) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      AppendSnapshotEntry(&payload, chunk.keys[i], chunk.values[i],
                          i < chunk.expires.size() ? chunk.expires[i] : kNoExpiry);
      ++count;
      ++total;
      if (payload.size() >= kFramePayload) end_frame();
    }
  }
  end_frame();
  Status s = image->status();
  if (s.ok() && total != image->size()) {
    s = Status::Internal("snapshot reader returned " + std::to_string(total) + " of " +
                         std::to_string(image->size()) + " keys");
  }
  std::string end;
  PutU64(&end, total);
  AppendFrame(&out, FrameKind::kEnd, 0, end);
  if (err == 0) err = WriteAll(fd, out);
  written += out.size();
  if (err == 0) err = SyncFile(fd);
  ::close(fd);
  if (err == 0 && s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0 || !s.ok()) {
    ::unlink(tmp.c_str());
    return err != 0 ? IoError(tmp, err) : s;
  }
  err = SyncDir(DirName(path));
  if (err != 0) return IoError(DirName(path), err);
  if (bytes != nullptr) *bytes = written;
  return Status::Ok();
}

Status LoadSnapshotFile(const std::string& path, Store* store, uint64_t* keys, ReplayClock* clock) {
  *keys = 0;
  FrameFileReader reader;
  Status s = reader.Open(path, kSnapshotMagic);
  if (!s.ok()) return s;
  // Entries are loaded as they stood at the image's instant: one already
  // expired then is stored expired (gone), a live one keeps its expire-at.
  if (clock != nullptr && reader.version() >= 2 && reader.created() != 0) clock->Freeze(reader.created());
  BatchLoader loader(store, /*strict=*/true);
  FrameHeader h;
  std::string_view payload;
  for (;;) {
    const FrameFileReader::Next next = reader.Read(&h, &payload);
    if (next == FrameFileReader::Next::kEnd) {
      return IoError(path, "cut short: no end frame" + At(reader));
    }
    if (next != FrameFileReader::Next::kFrame) return IoError(path, reader.what() + At(reader));
    if (h.kind == uint32_t(FrameKind::kEnd)) {
      uint64_t expect = 0;
      if (payload.size() == 8) std::memcpy(&expect, payload.data(), 8);
      if (payload.size() != 8 || expect != loader.ops()) {
        return IoError(path, "end frame counts " + std::to_string(expect) + " keys, the file holds " +
                                 std::to_string(loader.ops()) + At(reader));
      }
      FrameHeader extra;
      if (reader.Read(&extra, &payload) != FrameFileReader::Next::kEnd) {
        return IoError(path, "bytes after the end frame" + At(reader));
      }
      break;
    }
    if (h.kind != uint32_t(FrameKind::kSnapshotEntries)) {
      return IoError(path, "unexpected frame kind " + std::to_string(h.kind) + At(reader));
    }
    RecordReader rr(payload);
    std::string_view key, value;
    uint64_t expire_at = kNoExpiry;
    uint32_t n = 0;
    while (!rr.done()) {
      if (!rr.NextSnapshotEntry(&key, &value, &expire_at, reader.version())) {
        return IoError(path, "malformed entry" + At(reader));
      }
      loader.Add(OpType::kPut, key, value, expire_at);
      ++n;
    }
    if (n != h.records) return IoError(path, "frame record count mismatch" + At(reader));
  }
  s = loader.Flush();
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  *keys = loader.ops();
  return Status::Ok();
}

Status ReplayLogFile(const std::string& path, Store* store, bool last_file, uint64_t* records,
                     std::string* warning, ReplayClock* clock) {
  *records = 0;
  FrameFileReader reader;
  Status s = reader.Open(path, kLogMagic);
  if (!s.ok()) return s;
  BatchLoader loader(store, /*strict=*/false);
  uint64_t clock_at = 0;  // the time the clock is frozen at by this file
  FrameHeader h;
  std::string_view payload;
  for (;;) {
    const FrameFileReader::Next next = reader.Read(&h, &payload);
    if (next == FrameFileReader::Next::kEnd) break;
    if (next == FrameFileReader::Next::kTorn && last_file) {
      s = loader.Flush();
      if (!s.ok()) return Status(s.code(), path + ": " + s.message());
      const uint64_t cut = reader.offset();
      const uint64_t dropped = reader.file_size() - cut;
      if (::truncate(path.c_str(), off_t(cut)) != 0) return IoError(path, errno);
      // Durable before this file stops being the last one (a new file is
      // started next): a torn frame in an earlier file would be damage.
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      const int err = fd < 0 ? errno : SyncFile(fd);
      if (fd >= 0) ::close(fd);
      if (err != 0) return IoError(path, err);
      *warning = path + ": torn record at offset " + std::to_string(cut) + " (" + reader.what() + ", " +
                 std::to_string(dropped) + " bytes) truncated";
      break;
    }
    if (next != FrameFileReader::Next::kFrame) return IoError(path, reader.what() + At(reader));
    if (h.kind != uint32_t(FrameKind::kLogRecords)) {
      return IoError(path, "unexpected frame kind " + std::to_string(h.kind) + At(reader));
    }
    RecordReader rr(payload);
    RecordReader::LogRecord r;
    uint32_t n = 0;
    while (!rr.done()) {
      if (!rr.NextLogRecord(&r)) return IoError(path, "malformed record" + At(reader));
      ++n;
      switch (r.type) {
        case RecordType::kPut:
        case RecordType::kPutExpire:
          loader.Add(OpType::kPut, r.key, r.value, r.expire_at);
          break;
        case RecordType::kDelete:
          loader.Add(OpType::kDelete, r.key, {});
          break;
        case RecordType::kCas:
        case RecordType::kCasExpire:
          loader.AddCas(r.key, r.expect_absent ? nullptr : &r.expected, r.value, r.expire_at);
          break;
        case RecordType::kExpire:
          loader.AddExpire(r.key, r.expire_at, r.condition);
          break;
        case RecordType::kTime:
          if (clock == nullptr || (clock->frozen() && clock_at == r.time)) break;
          // Ops whose effect depends on the clock must run at the time
          // before this one: wait for them before moving it.
          if (loader.clock_sensitive()) {
            s = loader.Flush();
            if (!s.ok()) return Status(s.code(), path + ": " + s.message());
          }
          clock->Freeze(r.time);
          clock_at = r.time;
          break;
        case RecordType::kClear:
          s = loader.Flush();
          if (!s.ok()) return Status(s.code(), path + ": " + s.message());
          store->Clear();
          break;
      }
    }
    if (n != h.records) return IoError(path, "frame record count mismatch" + At(reader));
    *records += n;
  }
  s = loader.Flush();
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  if (loader.refused() != 0) {
    // E.g. a lower max-value-bytes or maxmemory than when they were logged.
    if (!warning->empty()) *warning += "; ";
    *warning += path + ": " + std::to_string(loader.refused()) +
                " logged writes were refused by the store on replay (capacity or limits; a write refused when first made is refused again)";
  }
  return Status::Ok();
}

}  // namespace kvcg::durability
