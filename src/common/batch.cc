// Batch: columns carved from one region of a BatchMemory, plus two growable
// byte arenas (keys + expected values, 8-byte aligned and zero-padded; and
// values). Offsets rather than pointers, so regions can grow (and be DMA'd
// as is) without fixing anything up.
#include "kvcg/batch.h"

#include "common/op_scan.h"
#include "common/prefetch.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define KVCG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVCG_ASAN 1
#endif
#endif
#ifndef KVCG_ASAN
#define KVCG_ASAN 0
#endif

namespace kvcg {

const char* OpTypeName(OpType type) {
  switch (type) {
    case OpType::kGet: return "GET";
    case OpType::kPut: return "PUT";
    case OpType::kDelete: return "DELETE";
    case OpType::kCompareAndSwap: return "CAS";
    case OpType::kExpire: return "EXPIRE";
    case OpType::kNoop: return "NOOP";
  }
  return "UNKNOWN";
}

namespace {

// The heap, with a small per-thread cache of power-of-two blocks: a loop
// that submits one fresh batch per call (a batch cannot be handed back once
// submitted) would otherwise pay three aligned allocations per batch. Blocks
// up to 1 MiB, at most kCachedPerClass per class and thread; a block freed
// on another thread simply joins that thread's cache. Under AddressSanitizer
// the cache is off, so a batch used after it died is still reported.
class HeapMemory final : public BatchMemory {
 public:
  void* Allocate(size_t bytes) override {
#if !KVCG_ASAN
    const int c = ClassOf(bytes);
    if (c < kClasses) {
      Cache& cache = LocalCache();
      if (cache.count[c] != 0) return cache.blocks[c][--cache.count[c]];
      return Raw(size_t(1) << (c + kMinShift));
    }
#endif
    return Raw(bytes);
  }
  void Free(void* p, size_t bytes) override {
#if !KVCG_ASAN
    const int c = ClassOf(bytes);
    if (c < kClasses) {
      Cache& cache = LocalCache();
      if (cache.count[c] < kCachedPerClass) {
        cache.blocks[c][cache.count[c]++] = p;
        return;
      }
    }
#endif
    ::operator delete(p, std::align_val_t(64));
  }
  bool pinned() const override { return false; }

 private:
  static constexpr int kMinShift = 8;  // 256 bytes
  static constexpr int kClasses = 13;  // up to 1 MiB
  static constexpr int kCachedPerClass = 4;
  struct Cache {
    void* blocks[kClasses][kCachedPerClass] = {};
    int count[kClasses] = {};
    ~Cache() {
      for (int c = 0; c < kClasses; ++c) {
        for (int i = 0; i < count[c]; ++i) ::operator delete(blocks[c][i], std::align_val_t(64));
      }
    }
  };
  static Cache& LocalCache() {
    thread_local Cache cache;
    return cache;
  }
  static int ClassOf(size_t bytes) {
    int c = 0;
    while ((size_t(1) << (c + kMinShift)) < bytes && c < kClasses) ++c;
    return c;
  }
  static void* Raw(size_t bytes) { return ::operator new(bytes, std::align_val_t(64), std::nothrow); }
};

// Bytes per op of all per-op columns together (see Rebind for the order).
constexpr size_t kOpBytes = 8 + 8 + 8 + 8 + 4 + 1 + 1;
constexpr size_t Align8(size_t x) { return (x + 7) & ~size_t(7); }
constexpr size_t Align64(size_t x) { return (x + 63) & ~size_t(63); }
// Region bytes for `ops` ops: each column starts 64-byte aligned.
constexpr size_t OpRegionBytes(size_t ops) {
  return Align64(ops * 8) * 4 + Align64(ops * 4) + Align64(ops) * 2;
}

// AppendBulk reads the values of the storing ops at scattered places of its
// `values` column (a GET's slot is skipped): each would be a cache miss in
// a row. A second scan runs kStoresAhead storing ops ahead of the one being
// copied and requests the first lines of their values. Counted in stores,
// not in ops: at 95/5 a distance of 16 ops was one PUT, too close to hide a
// miss (kvcg-bench-gpu e2e general 95/5: ~175 ns per PUT in the append).
constexpr int kStoresAhead = 8;
constexpr size_t kValueLookaheadLines = 4;
bool Stores(OpType t) { return TypeIn(t, kStoringTypes); }
class StoreLookahead {
 public:
  // Over ops [0, n) of `types`; values null: nothing to request.
  StoreLookahead(const OpType* types, const char* values, size_t width, size_t n)
      : scan_(types, n, kStoringTypes), values_(values), width_(width),
        lines_(std::min<size_t>((width + 63) / 64, kValueLookaheadLines)) {
    for (int k = 0; k < kStoresAhead; ++k) Advance();
  }
  // Once per storing op copied, in op order.
  void Advance() {
    size_t i;
    if (values_ == nullptr || !scan_.Next(&i)) return;
    const char* p = values_ + i * width_;
    for (size_t l = 0; l < lines_; ++l) PrefetchLine(p + 64 * l);
  }

 private:
  OpScan scan_;
  const char* values_;
  size_t width_, lines_;
};

}  // namespace

BatchMemory* HeapBatchMemory() {
  static HeapMemory* memory = new HeapMemory();
  return memory;
}

Batch::Batch(BatchMemory* memory) : memory_(memory != nullptr ? memory : HeapBatchMemory()) {}

Batch::~Batch() {
  FreeRegion(ops_);
  FreeRegion(keyr_);
  FreeRegion(valr_);
}

Batch::Batch(Batch&& other) noexcept : memory_(other.memory_) { *this = std::move(other); }

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this == &other) return *this;
  FreeRegion(ops_);
  FreeRegion(keyr_);
  FreeRegion(valr_);
  memory_ = other.memory_;
  ops_ = other.ops_;
  keyr_ = other.keyr_;
  valr_ = other.valr_;
  n_ = other.n_;
  op_cap_ = other.op_cap_;
  key_used_ = other.key_used_;
  value_used_ = other.value_used_;
  stores_ = other.stores_;
  fixed_key_ = other.fixed_key_;
  fixed_value_ = other.fixed_value_;
  has_cas_ = other.has_cas_;
  has_expiry_ = other.has_expiry_;
  Rebind();
  other.ops_ = Region{};
  other.keyr_ = Region{};
  other.valr_ = Region{};
  other.n_ = other.op_cap_ = other.key_used_ = other.value_used_ = other.stores_ = 0;
  other.fixed_key_ = other.fixed_value_ = 0;
  other.has_cas_ = false;
  other.has_expiry_ = false;
  other.Rebind();
  return *this;
}

Batch::Batch(const Batch& other) : memory_(other.memory_) { CopyFrom(other); }

Batch& Batch::operator=(const Batch& other) {
  if (this != &other) {
    Clear();
    CopyFrom(other);
  }
  return *this;
}

void Batch::CopyFrom(const Batch& other) {
  Reserve(other.n_, other.key_used_, other.value_used_);
  n_ = other.n_;
  if (n_ != 0) {
    std::memcpy(types_, other.types_, n_);
    if (other.fixed_key_ == 0) {
      std::memcpy(keys_, other.keys_, n_ * 8);
      std::memcpy(values_, other.values_, n_ * 8);
      std::memcpy(value_lens_, other.value_lens_, n_ * 4);
      std::memcpy(expected_, other.expected_, n_ * 8);
    }
    if (other.has_expiry_) {
      std::memcpy(expire_, other.expire_, n_ * 8);
      std::memcpy(conditions_, other.conditions_, n_);
    }
  }
  if (other.key_used_ != 0) std::memcpy(key_bytes_, other.key_bytes_, other.key_used_);
  if (other.value_used_ != 0) std::memcpy(value_bytes_, other.value_bytes_, other.value_used_);
  key_used_ = other.key_used_;
  value_used_ = other.value_used_;
  stores_ = other.stores_;
  fixed_key_ = other.fixed_key_;
  fixed_value_ = other.fixed_value_;
  has_cas_ = other.has_cas_;
  has_expiry_ = other.has_expiry_;
}

bool Batch::pinned() const {
  return memory_->pinned() && !ops_.heap && !keyr_.heap && !valr_.heap;
}

void Batch::FreeRegion(Region& r) {
  if (r.p == nullptr) return;
  if (r.heap) {
    HeapBatchMemory()->Free(r.p, r.cap);
  } else {
    memory_->Free(r.p, r.cap);
  }
  r = Region{};
}

Batch::Region Batch::NewRegion(size_t bytes) {
  Region fresh;
  fresh.p = static_cast<char*>(memory_->Allocate(bytes));
  if (fresh.p == nullptr) {
    fresh.p = static_cast<char*>(HeapBatchMemory()->Allocate(bytes));
    fresh.heap = true;
    if (fresh.p == nullptr) throw std::bad_alloc();
  }
  fresh.cap = bytes;
  return fresh;
}

void Batch::Grow(Region& r, size_t used, size_t want) {
  if (want <= r.cap) return;
  const Region fresh = NewRegion(std::max<size_t>({want, r.cap * 2, 256}));
  if (used != 0) std::memcpy(fresh.p, r.p, used);
  FreeRegion(r);
  r = fresh;
}

void Batch::Rebind() {
  if (ops_.p == nullptr) {
    types_ = nullptr;
    keys_ = values_ = expected_ = expire_ = nullptr;
    value_lens_ = nullptr;
    conditions_ = nullptr;
  } else {
    char* p = ops_.p;
    keys_ = reinterpret_cast<uint64_t*>(p);
    p += Align64(op_cap_ * 8);
    values_ = reinterpret_cast<uint64_t*>(p);
    p += Align64(op_cap_ * 8);
    expected_ = reinterpret_cast<uint64_t*>(p);
    p += Align64(op_cap_ * 8);
    expire_ = reinterpret_cast<uint64_t*>(p);
    p += Align64(op_cap_ * 8);
    value_lens_ = reinterpret_cast<uint32_t*>(p);
    p += Align64(op_cap_ * 4);
    types_ = reinterpret_cast<OpType*>(p);
    p += Align64(op_cap_);
    conditions_ = reinterpret_cast<ExpireCondition*>(p);
  }
  key_bytes_ = keyr_.p;
  value_bytes_ = valr_.p;
}

void Batch::GrowOps(size_t want) {
  if (want <= op_cap_) return;
  const size_t cap = std::max<size_t>({want, op_cap_ * 2, 16});
  const Region fresh = NewRegion(OpRegionBytes(cap));
  // Copy each column into its new place.
  const OpType* t = types_;
  const uint64_t* k = keys_;
  const uint64_t* v = values_;
  const uint64_t* e = expected_;
  const uint64_t* x = expire_;
  const ExpireCondition* c = conditions_;
  const uint32_t* l = value_lens_;
  Region old = ops_;
  ops_ = fresh;
  const size_t old_cap = op_cap_;
  op_cap_ = cap;
  Rebind();
  if (n_ != 0) {
    std::memcpy(types_, t, n_);
    if (fixed_key_ == 0) {  // a fixed-width batch has no descriptors to keep
      std::memcpy(keys_, k, n_ * 8);
      std::memcpy(values_, v, n_ * 8);
      std::memcpy(expected_, e, n_ * 8);
      std::memcpy(value_lens_, l, n_ * 4);
    }
    if (has_expiry_) {
      std::memcpy(expire_, x, n_ * 8);
      std::memcpy(conditions_, c, n_);
    }
  }
  (void)old_cap;
  FreeRegion(old);
  Rebind();
}

uint64_t Batch::AppendKeyBytes(std::string_view bytes) {
  const size_t padded = Align8(bytes.size());
  if (key_used_ + padded >= kOverflow || bytes.size() >= kOverflow) {
    return uint64_t(kOverflow) | (uint64_t(uint32_t(bytes.size() >= kOverflow ? kOverflow - 1 : bytes.size())) << 32);
  }
  Grow(keyr_, key_used_, key_used_ + padded);
  key_bytes_ = keyr_.p;
  char* dst = keyr_.p + key_used_;
  if (padded != 0) {  // an empty key into an empty arena: dst may be null
    if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
    std::memset(dst + bytes.size(), 0, padded - bytes.size());
  }
  const uint64_t d = uint64_t(key_used_) | (uint64_t(bytes.size()) << 32);
  key_used_ += padded;
  return d;
}

void Batch::Unfix() {
  if (fixed_key_ == 0) return;
  const uint64_t klen = uint64_t(fixed_key_) << 32;
  for (size_t i = 0; i < n_; ++i) {
    keys_[i] = uint64_t(i * fixed_key_) | klen;
    values_[i] = i * fixed_value_;
    value_lens_[i] = FixedValueLen(i);
    expected_[i] = 0;
  }
  fixed_key_ = fixed_value_ = 0;
}

void Batch::EnableExpiry() {
  if (has_expiry_) return;
  for (size_t i = 0; i < n_; ++i) expire_[i] = kNoExpiry;
  std::memset(conditions_, static_cast<int>(ExpireCondition::kAlways), n_);
  has_expiry_ = true;
}

void Batch::Append(OpType type, std::string_view key, std::string_view value, uint64_t expire_at) {
  Unfix();
  if (n_ == op_cap_) GrowOps(n_ + 1);
  if (expire_at != kNoExpiry || type == OpType::kExpire) EnableExpiry();
  types_[n_] = type;
  keys_[n_] = AppendKeyBytes(key);
  const size_t vpad = Align8(value.size());
  Grow(valr_, value_used_, value_used_ + vpad);
  value_bytes_ = valr_.p;
  if (!value.empty()) std::memcpy(valr_.p + value_used_, value.data(), value.size());
  values_[n_] = value_used_;
  // A value over 4 GiB cannot be described; it is over every value limit
  // anyway (CheckOperation answers kValueTooLarge for the recorded size).
  value_lens_[n_] = value.size() > 0xffffffffu ? 0xffffffffu : uint32_t(value.size());
  value_used_ += vpad;
  expected_[n_] = 0;
  if (has_expiry_) {
    expire_[n_] = expire_at;
    conditions_[n_] = ExpireCondition::kAlways;
  }
  if (Stores(type)) ++stores_;
  if (type == OpType::kCompareAndSwap) {
    has_cas_ = true;
    expected_[n_] = kExpectAbsent;
  }
  ++n_;
}

void Batch::CompareAndSwap(std::string_view key, const std::string_view* expected,
                           std::string_view desired, uint64_t expire_at) {
  Append(OpType::kCompareAndSwap, key, desired, expire_at);
  if (expected != nullptr) expected_[n_ - 1] = AppendKeyBytes(*expected);
}

void Batch::Expire(std::string_view key, uint64_t expire_at, ExpireCondition condition) {
  Append(OpType::kExpire, key, {}, expire_at);
  conditions_[n_ - 1] = condition;
}

void Batch::SetNoop(size_t i) {
  if (TypeIn(types_[i], kStoringTypes)) --stores_;
  types_[i] = OpType::kNoop;
}

void Batch::AppendFrom(const Batch& other, size_t i) {
  if (other.types_[i] == OpType::kCompareAndSwap) {
    const std::string_view e = other.expected(i);
    CompareAndSwap(other.key(i), other.expect_absent(i) ? nullptr : &e, other.value(i),
                   other.expire_at(i));
  } else {
    Append(other.types_[i], other.key(i), other.value(i), other.expire_at(i));
  }
  if (has_expiry_) conditions_[n_ - 1] = other.condition(i);
  // Bytes that did not fit there do not fit here either: keep the marks.
  if (other.fixed_key_ != 0) return;  // (a fixed-width batch has none)
  if (uint32_t(other.keys_[i]) == kOverflow) keys_[n_ - 1] = other.keys_[i];
  if (other.types_[i] == OpType::kCompareAndSwap && other.expected_[i] != kExpectAbsent &&
      uint32_t(other.expected_[i]) == kOverflow) {
    expected_[n_ - 1] = other.expected_[i];
  }
}

void Batch::AppendBulk(const OpType* types, const void* keys, size_t key_width,
                       const void* values, size_t value_width, size_t n) {
  if (n == 0) return;
  const size_t kpad = Align8(key_width);
  if (key_used_ + kpad * n >= kOverflow || key_width >= kOverflow) {
    // Past the key-byte limit: the per-op path marks what does not fit.
    for (size_t i = 0; i < n; ++i) {
      const std::string_view k(static_cast<const char*>(keys) + i * key_width, key_width);
      const bool put = types[i] == OpType::kPut && values != nullptr;
      const std::string_view v =
          put ? std::string_view(static_cast<const char*>(values) + i * value_width, value_width)
              : std::string_view();
      if (types[i] == OpType::kCompareAndSwap) CompareAndSwap(k, nullptr, v);
      else Append(types[i], k, v);
    }
    return;
  }
  // What the ops are, 64 at a time (common/op_scan.h).
  size_t puts = 0, last_store = 0;
  bool expires = false, cas = false;
  for (size_t base = 0; base < n; base += 64) {
    const size_t count = std::min<size_t>(64, n - base);
    const uint64_t stores = TypeMask64(types + base, count, kStoringTypes);
    puts += size_t(std::popcount(stores));
    if (stores != 0) last_store = base + 64 - size_t(std::countl_zero(stores));
    expires |= TypeMask64(types + base, count, TypeBit(OpType::kExpire)) != 0;
    cas |= TypeMask64(types + base, count, TypeBit(OpType::kCompareAndSwap)) != 0;
  }
  // Fixed-width (see batch.h): the columns are three copies.
  const bool fixed_ok = kpad == key_width && key_width != 0 && value_width % 8 == 0 &&
                        value_width <= kFixedMaxValueWidth && !expires && !cas;
  if (fixed_ok && (n_ == 0 || (fixed_key_ == key_width && fixed_value_ == value_width))) {
    GrowOps(n_ + n);
    Grow(keyr_, key_used_, key_used_ + key_width * n);
    Grow(valr_, value_used_, value_used_ + value_width * n);
    Rebind();
    std::memcpy(types_ + n_, types, n);
    std::memcpy(keyr_.p + key_used_, keys, key_width * n);
    char* vdst = valr_.p + value_used_;
    if (value_width != 0 && value_width <= 8) {  // one copy: cheaper than skipping GET slots
      if (values != nullptr) {
        std::memcpy(vdst, values, value_width * last_store);
      } else {
        std::memset(vdst, 0, value_width * last_store);
      }
    } else if (value_width > 8) {  // only the slots of the ops that store (see batch.h)
      const char* vsrc = static_cast<const char*>(values);
      StoreLookahead ahead(types, vsrc, value_width, last_store);
      size_t i;
      for (OpScan at(types, last_store, kStoringTypes); at.Next(&i);) {
        if (vsrc == nullptr) {
          std::memset(vdst + i * value_width, 0, value_width);
          continue;
        }
        ahead.Advance();
        std::memcpy(vdst + i * value_width, vsrc + i * value_width, value_width);
      }
    }
    fixed_key_ = uint32_t(key_width);
    fixed_value_ = uint32_t(value_width);
    key_used_ += key_width * n;
    value_used_ += value_width * n;
    stores_ += puts;
    n_ += n;
    return;
  }
  Unfix();
  GrowOps(n_ + n);
  Grow(keyr_, key_used_, key_used_ + kpad * n);
  const size_t vpad = Align8(value_width);
  Grow(valr_, value_used_, value_used_ + vpad * puts);
  Rebind();
  if (expires) EnableExpiry();
  std::memcpy(types_ + n_, types, n);
  // Keys: one copy when they are already 8-byte multiples, else padded.
  char* kdst = keyr_.p + key_used_;
  if (kpad == key_width) {
    if (key_width != 0) std::memcpy(kdst, keys, key_width * n);  // (empty keys: kdst may be null)
  } else {
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(kdst + i * kpad, static_cast<const char*>(keys) + i * key_width, key_width);
      std::memset(kdst + i * kpad + key_width, 0, kpad - key_width);
    }
  }
  const uint64_t klen = uint64_t(key_width) << 32;
  size_t voff = value_used_;
  StoreLookahead ahead(types, static_cast<const char*>(values), value_width, n);
  for (size_t i = 0; i < n; ++i) {
    const size_t j = n_ + i;
    keys_[j] = uint64_t(key_used_ + i * kpad) | klen;
    const OpType t = types[i];
    const bool stores = Stores(t);
    values_[j] = voff;
    value_lens_[j] = stores ? uint32_t(value_width) : 0;
    expected_[j] = t == OpType::kCompareAndSwap ? kExpectAbsent : 0;
    if (has_expiry_) {
      expire_[j] = kNoExpiry;
      conditions_[j] = ExpireCondition::kAlways;
    }
    if (stores) {
      ahead.Advance();
      if (values != nullptr) {
        std::memcpy(valr_.p + voff, static_cast<const char*>(values) + i * value_width, value_width);
      } else {
        std::memset(valr_.p + voff, 0, value_width);
      }
      voff += vpad;
    }
    has_cas_ |= t == OpType::kCompareAndSwap;
  }
  key_used_ += kpad * n;
  value_used_ = voff;
  stores_ += puts;
  n_ += n;
}

void Batch::Clear() {
  n_ = 0;
  fixed_key_ = fixed_value_ = 0;
  key_used_ = 0;
  value_used_ = 0;
  stores_ = 0;
  has_cas_ = false;
  has_expiry_ = false;
}

void Batch::Reserve(size_t ops, size_t key_bytes, size_t value_bytes) {
  GrowOps(ops);
  Grow(keyr_, key_used_, key_bytes);
  Grow(valr_, value_used_, value_bytes);
  Rebind();
}

}  // namespace kvcg
