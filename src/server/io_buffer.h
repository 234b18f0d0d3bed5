// IoBuffer: a growable byte buffer with a read cursor, used for a
// connection's query buffer (socket -> parser) and reply buffer
// (writer -> socket).
//
// Bytes are appended at the end and consumed from the front; the consumed
// prefix is dropped lazily (Compact) so a consumer may keep string_views into
// the unconsumed bytes until it calls Compact or grows the buffer. This is
// what lets parsed command arguments point into the query buffer without a
// copy: the connection does not read again (and so never moves the bytes)
// until every command of the previous read has been answered.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace kvcg::server {

class IoBuffer {
 public:
  const char* data() const { return buf_.data() + begin_; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  // Bytes held including the consumed prefix (what the buffer costs).
  size_t capacity() const { return buf_.size(); }

  // Drops `n` bytes from the front.
  void Consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }

  // Moves the unconsumed bytes to the front. Invalidates views into the buffer.
  void Compact() {
    if (begin_ == 0) return;
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }

  // Returns a pointer to at least `n` writable bytes after the data; commit
  // what was written with Commit. May move the data (invalidates views).
  char* WritableTail(size_t n) {
    if (buf_.size() - end_ < n) {
      Compact();
      if (buf_.size() - end_ < n) buf_.resize(std::max(end_ + n, buf_.size() * 2));
    }
    return buf_.data() + end_;
  }
  size_t tail_room() const { return buf_.size() - end_; }
  void Commit(size_t n) { end_ += n; }

  void Append(std::string_view s) {
    std::memcpy(WritableTail(s.size()), s.data(), s.size());
    end_ += s.size();
  }

  // Releases memory when a burst has passed and the buffer is empty.
  void ShrinkIfIdle(size_t keep) {
    if (empty() && buf_.size() > keep) {
      std::string().swap(buf_);
      begin_ = end_ = 0;
    }
  }

 private:
  std::string buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace kvcg::server
