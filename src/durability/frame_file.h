// Files of frames (log_format.h): reading them back frame by frame, and the
// POSIX plumbing every writer needs (write everything, fsync, replace a file
// atomically).
//
// FrameFileReader tells a torn tail from damage. A log is appended to in
// whole frames, so a crash mid-write can leave only the LAST frame
// incomplete (too few bytes, or bytes the filesystem extended with zeros):
// that is kTorn, and the loader may cut it off. Anything else — a bad magic
// or checksum with more data after it, a bad file header — is kDamaged, and
// is reported with the file and byte offset, never skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "durability/log_format.h"
#include "kvcg/status.h"

namespace kvcg::durability {

class FrameFileReader {
 public:
  FrameFileReader() = default;
  ~FrameFileReader();
  FrameFileReader(const FrameFileReader&) = delete;
  FrameFileReader& operator=(const FrameFileReader&) = delete;

  // Opens `path` and checks its header against `magic`. kIoError naming the
  // file when it cannot be read or is not a kvcg file of that kind.
  Status Open(const std::string& path, const char (&magic)[8]);

  enum class Next { kFrame, kEnd, kTorn, kDamaged };
  // The next frame: *header and *payload (a view valid until the next call).
  // kEnd at a clean end of file; kTorn / kDamaged as above, with offset()
  // at the bad frame and what() describing it.
  Next Read(FrameHeader* header, std::string_view* payload);

  uint64_t offset() const { return frame_offset_; }  // of the frame last returned
  uint64_t file_size() const { return size_; }
  const std::string& what() const { return what_; }
  const std::string& path() const { return path_; }
  // From the file header (after a successful Open).
  uint32_t version() const { return version_; }
  uint64_t created() const { return created_; }

 private:
  bool Fill(uint64_t at, size_t bytes);  // makes [at, at+bytes) available in buf_

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t next_ = 0;          // offset of the next frame
  uint64_t frame_offset_ = 0;
  std::string buf_;            // file bytes [buf_at_, buf_at_ + buf_.size())
  uint64_t buf_at_ = 0;
  std::string what_;
  uint32_t version_ = 0;
  uint64_t created_ = 0;
};

// "path: <strerror(err)>" as a kIoError.
Status IoError(const std::string& path, int err);
Status IoError(const std::string& path, const std::string& what);

// Writes all of `bytes` at the end of fd (retrying short writes and EINTR).
// On failure returns errno and the file may hold a prefix of the bytes.
int WriteAll(int fd, std::string_view bytes);
// fdatasync, retried on EINTR. 0 or errno.
int SyncFile(int fd);
// fsync of a directory, so a rename or a new file in it survives a crash.
int SyncDir(const std::string& dir);
// Creates `dir` (and parents). kIoError on failure.
Status MakeDirs(const std::string& dir);
// Directory part / joined paths.
std::string DirName(const std::string& path);
std::string JoinPath(const std::string& dir, const std::string& name);
bool FileExists(const std::string& path);
uint64_t FileSize(const std::string& path);  // 0 when missing

// Writes `content` to `path` atomically: a temporary file in the same
// directory, fsync, rename over `path`, fsync of the directory.
Status ReplaceFile(const std::string& path, std::string_view content);

}  // namespace kvcg::durability
