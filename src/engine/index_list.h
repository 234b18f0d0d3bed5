// IndexList: up to n op indexes of a batch, on the stack for a server
// round's or a benchmark's batch size (no allocation per batch), else on
// the heap. KvcgEngine::Route keeps a batch's hot ops and the ops it
// answered in two of them.
#pragma once

#include <cstdint>
#include <vector>

namespace kvcg::engine {

class IndexList {
 public:
  explicit IndexList(uint32_t n) {
    if (n > kStack) {
      heap_.resize(n);
      data_ = heap_.data();
    }
  }
  IndexList(const IndexList&) = delete;
  IndexList& operator=(const IndexList&) = delete;
  // At most n pushes.
  void Push(uint32_t i) { data_[size_++] = i; }
  // Push(i) if `keep`, without a branch on it (a routing pass's hot flags
  // are as random as the workload); writes one past the list either way, so
  // a list filled by PushIf needs room for one more than it keeps.
  void PushIf(uint32_t i, bool keep) {
    data_[size_] = i;
    size_ += keep;
  }
  uint32_t operator[](uint32_t k) const { return data_[k]; }
  uint32_t size() const { return size_; }

 private:
  static constexpr uint32_t kStack = 1024;
  uint32_t stack_[kStack];  // not initialised: only pushed entries are read
  std::vector<uint32_t> heap_;
  uint32_t* data_ = stack_;
  uint32_t size_ = 0;
};

}  // namespace kvcg::engine
