// Test support for the window table (store/gpu/window_types.h): a host op,
// a 64-bit mixing hash, and Rig — device columns for batches and one
// LaunchWindowOps around them, numbering same-key ops into groups as the
// pipeline does, on the table's view with the access mode and LRU
// generation the Rig was given (a WindowTable keeps neither; a store sets
// them as this does). Header-only; GPU tests only.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "store/gpu/lslab_types.h"
#include "store/gpu/window_kernel.h"
#include "store/gpu/window_table.h"

namespace kvcg::store::gpu::window_test {


struct HostOp {
  uint32_t type;  // OpCode
  uint64_t key, value = 0, expected = 0;
  bool flag = false;  // CAS: expect absent
};
struct Outcome {
  uint8_t code;
  uint64_t value;
};

inline uint64_t MixHash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  return k ^ (k >> 33);
}

// Device columns for batches of up to `cap` ops, and the launch around them.
class Rig {
 public:
  explicit Rig(uint32_t cap) : cap_(cap) {
    cudaStreamCreate(&s_);
    for (auto** p : {&hash_, &key_, &ctl_, &value_, &expected_, &res_value_, &out_values_}) {
      cudaMalloc(p, cap * 8ull);
    }
    cudaMalloc(&res_code_, cap);
    cudaMalloc(&out_codes_, cap);
    cudaMalloc(&skip_, cap);
    cudaMalloc(&done_, (cap + 1) * 4ull);
    cudaMalloc(&hdr_, 16);
  }
  ~Rig() {
    for (void* p : {(void*)hash_, (void*)key_, (void*)ctl_, (void*)value_, (void*)expected_,
                    (void*)res_value_, (void*)out_values_, (void*)res_code_, (void*)out_codes_,
                    (void*)skip_, (void*)done_, (void*)hdr_}) {
      cudaFree(p);
    }
    cudaStreamDestroy(s_);
  }

  // The access mode and LRU generation of later launches (and of ViewOf);
  // kAccessNone and 0 until set.
  void SetAccess(uint32_t mode, uint32_t generation) {
    access_mode_ = mode;
    generation_ = generation;
  }
  uint32_t access_mode() const { return access_mode_; }
  // The grid cap of later launches (LaunchWindowOps' max_blocks; 0 until
  // set: none).
  void SetMaxBlocks(uint32_t max_blocks) { max_blocks_ = max_blocks; }
  uint32_t generation() const { return generation_; }
  // Whether later GET-kernel launches get the hash column (true until set);
  // without it the kernel hashes each key with Xxh3Fixed8, as the pipeline
  // has it do when the store's hash is XXH3.
  void SetHashColumn(bool with) { hash_column_ = with; }
  // `t`'s view with them.
  WindowTableView ViewOf(const WindowTable& t) const {
    WindowTableView v = t.view();
    v.access_mode = access_mode_;
    v.generation = generation_;
    return v;
  }

  // Runs `ops` as one batch. allowance: EMPTY slots it may claim (*left: what
  // is left). skip: per op, nonzero = answered already with that code
  // (kvcg_form only). kvcg_form: results through out_codes / out_values
  // (codes are then kvcg::Code bytes), else the raw columns. A batch of
  // GETs only goes to the GET kernel (ArbView::gets_only), as the pipeline
  // sends it, unless gets_kernel is false.
  std::vector<Outcome> Run(WindowTable& t, const std::vector<HostOp>& ops, int allowance,
                           const std::function<uint64_t(uint64_t)>& hash, int* left = nullptr,
                           const std::vector<uint8_t>* skip = nullptr, bool kvcg_form = false,
                           uint32_t* retry_flag = nullptr, bool gets_kernel = true) {
    const uint32_t n = uint32_t(ops.size());
    bool gets_only = gets_kernel;
    for (const HostOp& op : ops) gets_only = gets_only && op.type == kOpGet;
    EXPECT_LE(n, cap_);
    std::vector<uint64_t> h(n), k(n), c(n), v(n), e(n);
    std::unordered_map<uint64_t, std::vector<uint32_t>> by_key;
    for (uint32_t i = 0; i < n; ++i) by_key[ops[i].key].push_back(i);
    uint32_t groups = 0;
    std::vector<uint32_t> group(n, 0), need(n, 0);
    for (auto& [key, idx] : by_key) {
      if (idx.size() < 2) continue;
      ++groups;
      for (uint32_t r = 0; r < idx.size(); ++r) {
        group[idx[r]] = groups;
        need[idx[r]] = r;
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      h[i] = hash(ops[i].key);
      k[i] = ops[i].key;
      c[i] = MakeCtl(ops[i].type, ops[i].flag, group[i], need[i]);
      v[i] = ops[i].value;
      e[i] = ops[i].expected;
    }
    cudaMemcpy(hash_, h.data(), n * 8ull, cudaMemcpyHostToDevice);
    cudaMemcpy(key_, k.data(), n * 8ull, cudaMemcpyHostToDevice);
    cudaMemcpy(ctl_, c.data(), n * 8ull, cudaMemcpyHostToDevice);
    cudaMemcpy(value_, v.data(), n * 8ull, cudaMemcpyHostToDevice);
    cudaMemcpy(expected_, e.data(), n * 8ull, cudaMemcpyHostToDevice);
    cudaMemset(done_, 0, (groups + 1) * 4ull);
    uint32_t hdr[4] = {0, uint32_t(allowance), 0, 0};
    cudaMemcpy(hdr_, hdr, 16, cudaMemcpyHostToDevice);
    if (skip != nullptr) cudaMemcpy(skip_, skip->data(), n, cudaMemcpyHostToDevice);

    ArbView a{};
    a.n = n;
    a.gets_only = gets_only ? 1 : 0;
    a.cursor = hdr_;
    a.slab_allowance = reinterpret_cast<int*>(hdr_ + 1);
    a.retry_flag = hdr_ + 2;
    a.hash = gets_only && !hash_column_ ? nullptr : hash_;
    a.key = key_;
    a.ctl = ctl_;
    a.value = value_;
    a.expected = expected_;
    a.done = done_;
    a.skip = skip != nullptr ? skip_ : nullptr;
    if (kvcg_form) {
      a.out_codes = out_codes_;
      a.out_values = out_values_;
    } else {
      a.res_code = res_code_;
      a.res_value = res_value_;
    }
    EXPECT_EQ(LaunchWindowOps(ViewOf(t), a, max_blocks_, s_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
    std::vector<uint8_t> codes(n);
    std::vector<uint64_t> values(n);
    cudaMemcpy(codes.data(), kvcg_form ? out_codes_ : res_code_, n, cudaMemcpyDeviceToHost);
    cudaMemcpy(values.data(), kvcg_form ? out_values_ : res_value_, n * 8ull,
               cudaMemcpyDeviceToHost);
    cudaMemcpy(hdr, hdr_, 16, cudaMemcpyDeviceToHost);
    if (left != nullptr) *left = int(hdr[1]);
    if (retry_flag != nullptr) *retry_flag = hdr[2];
    std::vector<Outcome> out(n);
    for (uint32_t i = 0; i < n; ++i) out[i] = {codes[i], values[i]};
    return out;
  }

  cudaStream_t stream() const { return s_; }

 private:
  uint32_t cap_;
  uint32_t access_mode_ = kAccessNone, generation_ = 0, max_blocks_ = 0;
  bool hash_column_ = true;
  cudaStream_t s_ = nullptr;
  uint64_t *hash_ = nullptr, *key_ = nullptr, *ctl_ = nullptr, *value_ = nullptr,
           *expected_ = nullptr, *res_value_ = nullptr, *out_values_ = nullptr;
  uint8_t *res_code_ = nullptr, *out_codes_ = nullptr, *skip_ = nullptr;
  uint32_t *done_ = nullptr, *hdr_ = nullptr;
};

}  // namespace kvcg::store::gpu::window_test
