// Reading frame files back, and the POSIX helpers of frame_file.h.
#include "durability/frame_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kvcg::durability {

Status IoError(const std::string& path, int err) { return IoError(path, std::strerror(err)); }
Status IoError(const std::string& path, const std::string& what) {
  return Status(Code::kIoError, path + ": " + what);
}

FrameFileReader::~FrameFileReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status FrameFileReader::Open(const std::string& path, const char (&magic)[8]) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return IoError(path, errno);
  struct stat st;
  if (::fstat(fd_, &st) != 0) return IoError(path, errno);
  size_ = uint64_t(st.st_size);
  if (size_ < kFileHeaderBytes || !Fill(0, kFileHeaderBytes)) {
    return IoError(path, "not a kvcg file (shorter than its 32-byte header) at offset 0");
  }
  if (std::memcmp(buf_.data(), magic, 8) != 0) {
    return IoError(path, std::string("not a kvcg ") + (magic[4] == 'L' ? "log" : "snapshot") +
                             " file (bad magic) at offset 0");
  }
  uint32_t version;
  std::memcpy(&version, buf_.data() + 8, 4);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return IoError(path, "format version " + std::to_string(version) + " is not supported (this build reads " +
                             std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) +
                             ") at offset 8");
  }
  version_ = version;
  std::memcpy(&created_, buf_.data() + 16, 8);
  next_ = kFileHeaderBytes;
  return Status::Ok();
}

bool FrameFileReader::Fill(uint64_t at, size_t bytes) {
  if (at >= buf_at_ && at + bytes <= buf_at_ + buf_.size()) return true;
  // Read from `at` a window of at least `bytes`, usually 8 MiB.
  const size_t want = std::max<size_t>(bytes, 8 << 20);
  const size_t n = size_t(std::min<uint64_t>(want, size_ - at));
  if (n < bytes) return false;
  buf_.resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd_, buf_.data() + got, n - got, off_t(at + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      buf_.clear();
      return false;
    }
    got += size_t(r);
  }
  buf_at_ = at;
  return true;
}

FrameFileReader::Next FrameFileReader::Read(FrameHeader* header, std::string_view* payload) {
  frame_offset_ = next_;
  if (next_ == size_) return Next::kEnd;
  const uint64_t left = size_ - next_;
  auto all_zero = [&](uint64_t from, uint64_t n) {
    if (!Fill(from, size_t(n))) return false;
    const char* p = buf_.data() + (from - buf_at_);
    for (uint64_t i = 0; i < n; ++i) {
      if (p[i] != 0) return false;
    }
    return true;
  };
  if (left < kFrameHeaderBytes) {
    what_ = "incomplete frame header (" + std::to_string(left) + " bytes) at the end";
    return Next::kTorn;
  }
  if (!Fill(next_, kFrameHeaderBytes)) {
    what_ = "read error";
    return Next::kDamaged;
  }
  const char* h = buf_.data() + (next_ - buf_at_);
  *header = ParseFrameHeader(h);
  if (header->magic != kFrameMagic) {
    // A crash can leave a zero-filled tail (the size grew, the data did not land).
    if (left <= (64u << 20) && all_zero(next_, left)) {
      what_ = "zero-filled tail (" + std::to_string(left) + " bytes)";
      return Next::kTorn;
    }
    what_ = "bad frame magic";
    return Next::kDamaged;
  }
  if (!header->header_ok) {
    what_ = "bad frame header check";
    return Next::kDamaged;
  }
  const uint64_t total = kFrameHeaderBytes + uint64_t(header->payload_bytes);
  if (total > left) {
    what_ = "incomplete frame (" + std::to_string(left) + " of " + std::to_string(total) + " bytes) at the end";
    return Next::kTorn;
  }
  if (!Fill(next_, size_t(total))) {
    what_ = "read error";
    return Next::kDamaged;
  }
  h = buf_.data() + (next_ - buf_at_);
  *payload = std::string_view(h + kFrameHeaderBytes, header->payload_bytes);
  if (!FrameChecksumOk(h, *payload)) {
    if (next_ + total == size_) {
      what_ = "checksum mismatch in the last frame";
      return Next::kTorn;
    }
    what_ = "checksum mismatch";
    return Next::kDamaged;
  }
  next_ += total;
  return Next::kFrame;
}

int WriteAll(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    left -= size_t(n);
  }
  return 0;
}

int SyncFile(int fd) {
  while (::fdatasync(fd) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

int SyncDir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int rc = 0;
  while (::fsync(fd) != 0) {
    if (errno != EINTR) {
      rc = errno;
      break;
    }
  }
  ::close(fd);
  return rc;
}

Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return IoError(partial, errno);
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return IoError(dir, errno);
  if (!S_ISDIR(st.st_mode)) return IoError(dir, "not a directory");
  return Status::Ok();
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

Status ReplaceFile(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(tmp, errno);
  int err = WriteAll(fd, content);
  if (err == 0) err = SyncFile(fd);
  ::close(fd);
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return IoError(path, err);
  }
  err = SyncDir(DirName(path));
  return err == 0 ? Status::Ok() : IoError(DirName(path), err);
}

}  // namespace kvcg::durability
