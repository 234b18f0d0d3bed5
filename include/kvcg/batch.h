// kvcg/batch.h — a batch of operations (the paper's Client Request Batch),
// stored as columns.
//
// A Batch is the unit every Store executes. It is columnar, so a backend can
// move it as a few contiguous arrays (one DMA each on the GPU) instead of
// visiting operations one by one:
//
//   types      OpType per op
//   keys       per op: offset (low 32 bits) | length (high 32) into key_bytes
//   values     per op: offset into value_bytes (64 bits; lengths in value_lens)
//   value_lens per op: value length (u32)
//   expected   per op (compare-and-swap): offset | length into key_bytes, or
//              kExpectAbsent; 0 for other ops
//   expire     per op: expire-at, milliseconds since the Unix epoch (see
//              Expiry below); kNoExpiry (0) for most ops
//   condition  per op: ExpireCondition byte (kExpire ops; 0 for others)
//              (expire and condition exist only while has_expiry(): a batch
//              whose ops carry no expiry neither writes nor ships them)
//   key_bytes  keys and CAS expected values, each starting 8-byte aligned and
//              zero-padded to a multiple of 8 (the GPU compares whole words)
//   value_bytes values, each starting 8-byte aligned
//
// Fixed-width batches. A batch filled only by AppendBulk calls with one key
// width and one value width (multiples of 8, the value at most
// kFixedMaxValueWidth; no compare-and-swap, no expiry) keeps no per-op
// descriptors: op i's key is the key_width bytes at key_bytes + i * key_width
// and its value slot the value_width bytes at value_bytes + i * value_width
// (a GET's slot is unused; slots wider than 8 bytes are written only for the
// ops that store, so an unused one costs memory, not a write). keys(),
// values(), value_lens() and expected_column() are then null; fixed_width()
// says so, and the per-op accessors work either way. Any other append turns
// the batch back into the general form first (writing the descriptors of the
// ops so far). Why: for 8-byte keys and values the descriptors were 28 of a
// fixed8 op's 45 bytes, written by the submitter and, 20 of them, sent over
// PCIe; for 16-byte keys and 64-byte values (the general layout, whose values
// do not travel to the device) 28 of a GET's 45 bytes, 12 of them sent
// (measured on the H100 host, docs/BENCHMARKS.md sections 2b and 2m).
//
// Memory. The columns and both arenas come from a BatchMemory. The default is
// the C++ heap; Store::NewBatch() returns a batch whose memory the store can
// use directly (the GPU backend leases page-locked memory, so the batch is
// copied to the device as is: the orchestrator copies nothing per operation).
// A Batch owns its memory and returns it to its BatchMemory when destroyed;
// the BatchMemory must outlive every Batch that uses it (a store's memory
// lives as long as the store).
//
// Cost. Appending copies the key and value once and is amortised O(1);
// a batch reused through Clear() allocates nothing once it has grown to its
// working size.
//
// Limits. A batch holds at most 2^32 - 1 bytes of keys and expected values
// (value bytes are unlimited). An op that would pass that is still appended,
// without its bytes; the store answers it kKeyTooLarge (or kValueTooLarge for
// an expected value). No Append ever fails or throws for large input.
//
// Expiry (Redis's TTLs). Times are absolute: milliseconds since the Unix
// epoch by the store's clock (Config::clock), as Redis keeps them. A PUT or
// CAS that stores sets the key's expire-at to its expire_at(i): kNoExpiry
// makes the key persistent (Redis SET), kKeepExpiry keeps what the key had
// (Redis KEEPTTL; none for a new key). A key whose expire-at is at or before
// the store's clock reads as absent to every operation (lazy expiry) and is
// reclaimed later without access (active expiry); storing with an expire-at
// already past takes effect and the key is gone at once. Layout::kFixed8
// stores no expiry: an op with an expire-at or a kExpire there gets
// kInvalidArgument.
//
// Thread-safety: a Batch is a value; distinct batches may be used from
// distinct threads, one batch by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kvcg/status.h"

namespace kvcg {

enum class OpType : uint8_t {
  kGet = 0,     // -> value | kNotFound
  kPut = 1,     // -> previous value | kNotFound; always stores the new value
  kDelete = 2,  // -> previous value | kNotFound
  // Compare-and-swap: stores `value` only if the key is present and its value
  // equals `expected`, or — with expect_absent — only if the key is absent (a
  // present key never matches expect_absent, even with an empty value).
  // -> current value before the op | kNotFound, like PUT. Whether it stored
  // follows from the result: found() ? (!expect_absent && result.value == expected)
  //                                  : expect_absent.
  // Read-modify-write commands (INCR, APPEND, SET NX/XX) are loops over it.
  kCompareAndSwap = 3,
  // Sets only the key's expire-at, to expire_at(i), when the key is present
  // and condition(i) holds (ExpireConditionHolds); kNoExpiry removes the
  // expiry (Redis PERSIST); a time at or before the store's clock deletes the
  // key (Redis EXPIRE in the past). The value is unchanged.
  // -> the value and expire-at before the op | kNotFound. Whether it applied
  // follows from the result: found() && ExpireConditionHolds(condition(i),
  // result.expire_at, expire_at(i)).
  kExpire = 4,
  // Does nothing and is answered kNotFound; its key and value are neither
  // checked nor read. For a producer that answers some ops of a batch itself
  // and hands the batch on to a store without copying the rest (the KVCG
  // engine's hot-cache hits, SetNoop below): the ops keep their positions,
  // so the store's results line up with the batch.
  kNoop = 5,
};

// Expire-at values with a meaning of their own (see Expiry above).
constexpr uint64_t kNoExpiry = 0;
constexpr uint64_t kKeepExpiry = ~uint64_t(0);

// When a kExpire applies (Redis EXPIRE's NX | XX | GT | LT). A key without
// expiry counts as expiring never (an infinite TTL), as in Redis: GT never
// applies to it, LT always does.
enum class ExpireCondition : uint8_t {
  kAlways = 0,
  kIfNone = 1,     // NX: only when the key has no expiry
  kIfSet = 2,      // XX: only when the key has one
  kIfGreater = 3,  // GT: only when the new time is later than the current one
  kIfLess = 4,     // LT: only when the new time is earlier than the current one
};

// Whether a key whose expire-at is `expire_at` is expired at time `now`.
constexpr bool IsExpired(uint64_t expire_at, uint64_t now) {
  return expire_at != kNoExpiry && expire_at <= now;
}

// Whether a kExpire with `condition` applies to a present key whose expire-at
// is `current` (kNoExpiry = none), asking for `wanted`.
constexpr bool ExpireConditionHolds(ExpireCondition condition, uint64_t current, uint64_t wanted) {
  switch (condition) {
    case ExpireCondition::kAlways: return true;
    case ExpireCondition::kIfNone: return current == kNoExpiry;
    case ExpireCondition::kIfSet: return current != kNoExpiry;
    case ExpireCondition::kIfGreater:
      return current != kNoExpiry && wanted != kNoExpiry && wanted > current;
    case ExpireCondition::kIfLess:
      return wanted != kNoExpiry && (current == kNoExpiry || wanted < current);
  }
  return false;
}

const char* OpTypeName(OpType type);

// Where a Batch's columns and arenas live. Implementations are thread-safe:
// batches are created and destroyed on any thread.
class BatchMemory {
 public:
  virtual ~BatchMemory() = default;
  // At least `bytes` bytes aligned to 64, or nullptr when none can be had
  // (the Batch then falls back to the heap).
  virtual void* Allocate(size_t bytes) = 0;
  // Returns memory from Allocate(bytes) with the same `bytes`.
  virtual void Free(void* p, size_t bytes) = 0;
  // True when the memory is page-locked for the owning store's device.
  virtual bool pinned() const = 0;
};

// The C++ heap (not pinned). Never null; lives forever.
BatchMemory* HeapBatchMemory();

class Batch {
 public:
  // expected(i) of a compare-and-swap that asks for an absent key.
  static constexpr uint64_t kExpectAbsent = ~uint64_t(0);
  // Offset recorded for bytes a batch could not hold (see Limits above).
  static constexpr uint32_t kOverflow = ~uint32_t(0);
  // The widest value a fixed-width batch keeps in per-op slots (see
  // Fixed-width batches above): one cache line. A GET's unused slot then
  // costs at most 64 bytes of the batch's memory and no write, while wider
  // values would make a mostly-GET batch's value arena much larger than its
  // values.
  static constexpr size_t kFixedMaxValueWidth = 64;

  // An empty batch in `memory` (null: the heap).
  explicit Batch(BatchMemory* memory = nullptr);
  ~Batch();
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  // Deep copy into the same BatchMemory.
  Batch(const Batch& other);
  Batch& operator=(const Batch& other);

  // Append an operation. Keys and values are copied; the views may die after
  // the call. Sizes are not checked here: limits are enforced by the store,
  // which answers an over-limit operation with an error result.
  void Get(std::string_view key) { Append(OpType::kGet, key, {}); }
  void Put(std::string_view key, std::string_view value, uint64_t expire_at = kNoExpiry) {
    Append(OpType::kPut, key, value, expire_at);
  }
  void Delete(std::string_view key) { Append(OpType::kDelete, key, {}); }
  // `expected == nullptr` means "only if absent".
  void CompareAndSwap(std::string_view key, const std::string_view* expected,
                      std::string_view desired, uint64_t expire_at = kNoExpiry);
  void Expire(std::string_view key, uint64_t expire_at,
              ExpireCondition condition = ExpireCondition::kAlways);
  void Append(OpType type, std::string_view key, std::string_view value,
              uint64_t expire_at = kNoExpiry);
  // Append op `i` of `other` (same bytes, expected value, expiry and condition).
  void AppendFrom(const Batch& other, size_t i);
  // Columnar append (cuCollections-style bulk input): n ops in one call, op
  // i of type types[i] with the key_width bytes at keys + i * key_width and,
  // for a kPut or kCompareAndSwap, the value_width bytes at
  // values + i * value_width (values null: zero bytes). A kCompareAndSwap
  // appended here is "only if absent"; no op carries an expiry. Same result as n Append calls, at
  // memcpy speed: the fast way to fill a batch from arrays (e.g. NumPy
  // columns). With `values` given, values + i * value_width is read for
  // every op up to the last one that stores. Keeps (or makes, when the batch
  // is empty) a fixed-width batch when the widths allow it (see above).
  void AppendBulk(const OpType* types, const void* keys, size_t key_width, const void* values,
                  size_t value_width, size_t n);

  // Turns op i into a kNoop (its bytes stay where they are; stores() drops
  // by one if it was a PUT or CAS; has_cas() and has_expiry() do not change).
  void SetNoop(size_t i);

  // Drop all operations, keeping the memory for reuse.
  void Clear();
  void Reserve(size_t ops, size_t key_bytes, size_t value_bytes);

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

  // --- One op.
  OpType type(size_t i) const { return types_[i]; }
  std::string_view key(size_t i) const {
    if (fixed_key_ != 0) return {key_bytes_ + i * fixed_key_, fixed_key_};
    return Slice(keys_[i]);
  }
  std::string_view value(size_t i) const {
    if (fixed_key_ != 0) return {value_bytes_ + i * fixed_value_, FixedValueLen(i)};
    return {value_bytes_ + values_[i], value_lens_[i]};
  }
  bool has_expected(size_t i) const { return fixed_key_ != 0 || expected_[i] != kExpectAbsent; }
  std::string_view expected(size_t i) const {
    if (fixed_key_ != 0) return {};
    return expected_[i] == kExpectAbsent ? std::string_view() : Slice(expected_[i]);
  }
  uint64_t expire_at(size_t i) const { return has_expiry_ ? expire_[i] : kNoExpiry; }
  ExpireCondition condition(size_t i) const {
    return has_expiry_ ? conditions_[i] : ExpireCondition::kAlways;
  }
  bool expect_absent(size_t i) const {
    return types_[i] == OpType::kCompareAndSwap && expected_[i] == kExpectAbsent;
  }
  // True when op i's key (or expected value) did not fit (Limits above).
  bool overflowed(size_t i) const {
    if (fixed_key_ != 0) return false;
    return uint32_t(keys_[i]) == kOverflow ||
           (types_[i] == OpType::kCompareAndSwap && expected_[i] != kExpectAbsent &&
            uint32_t(expected_[i]) == kOverflow);
  }

  // --- Columns (valid until the next non-const call). See the top comment.
  const OpType* types() const { return types_; }
  // The per-op descriptors: null while fixed_width().
  const uint64_t* keys() const { return fixed_key_ != 0 ? nullptr : keys_; }
  const uint64_t* values() const { return fixed_key_ != 0 ? nullptr : values_; }
  const uint32_t* value_lens() const { return fixed_key_ != 0 ? nullptr : value_lens_; }
  const uint64_t* expected_column() const { return fixed_key_ != 0 ? nullptr : expected_; }
  // Whether the batch is fixed-width (see above), and its widths (0 when not).
  bool fixed_width() const { return fixed_key_ != 0; }
  size_t fixed_key_width() const { return fixed_key_; }
  size_t fixed_value_width() const { return fixed_value_; }
  // Null while has_expiry() is false (no op has written them).
  const uint64_t* expire_column() const { return has_expiry_ ? expire_ : nullptr; }
  const ExpireCondition* condition_column() const { return has_expiry_ ? conditions_ : nullptr; }
  const char* key_bytes() const { return key_bytes_; }
  size_t key_bytes_size() const { return key_used_; }
  const char* value_bytes() const { return value_bytes_; }
  size_t value_bytes_size() const { return value_used_; }

  // Ops of type kPut or kCompareAndSwap (those that may store), and whether
  // any op is a compare-and-swap. Maintained by Append.
  size_t stores() const { return stores_; }
  bool has_cas() const { return has_cas_; }
  // Whether any op carries an expire-at (kKeepExpiry included) or is a
  // kExpire. The expiry columns are written only from the first such op on
  // (which fills them in for the ops before it), so a batch without one
  // pays nothing for them; readers skip them. Maintained by Append.
  bool has_expiry() const { return has_expiry_; }
  // True when every column lives in page-locked memory of `memory()`.
  bool pinned() const;
  BatchMemory* memory() const { return memory_; }

 private:
  // One growable region from memory_ (or the heap when memory_ fails).
  struct Region {
    char* p = nullptr;
    size_t cap = 0;
    bool heap = false;  // from the heap fallback
  };

  std::string_view Slice(uint64_t d) const {
    const uint32_t off = uint32_t(d);
    if (off == kOverflow) return {};
    return {key_bytes_ + off, size_t(d >> 32)};
  }
  // A region of `bytes` from memory_, or from the heap when it has none.
  Region NewRegion(size_t bytes);
  void GrowOps(size_t want);
  // Grows `r` to hold `want` bytes, keeping `used` of them.
  void Grow(Region& r, size_t used, size_t want);
  void FreeRegion(Region& r);
  uint64_t AppendKeyBytes(std::string_view bytes);  // offset | length << 32, or kOverflow
  void CopyFrom(const Batch& other);
  // The first op with an expiry: the columns get kNoExpiry / kAlways for
  // the ops before it, then has_expiry_.
  void EnableExpiry();
  // A fixed-width batch becomes a general one: the descriptors of its ops
  // are written. No-op for a general batch.
  void Unfix();
  // A fixed-width op's value length: a PUT stores its slot's width, every
  // other op none (a fixed-width batch holds no CAS).
  uint32_t FixedValueLen(size_t i) const { return types_[i] == OpType::kPut ? fixed_value_ : 0; }
  void Rebind();  // column pointers from ops_

  BatchMemory* memory_;
  Region ops_;  // all per-op columns, carved from one region
  Region keyr_;
  Region valr_;
  size_t n_ = 0, op_cap_ = 0;
  size_t key_used_ = 0, value_used_ = 0;
  size_t stores_ = 0;
  uint32_t fixed_key_ = 0, fixed_value_ = 0;  // fixed-width widths; key 0: general
  bool has_cas_ = false;
  bool has_expiry_ = false;
  OpType* types_ = nullptr;
  uint64_t* keys_ = nullptr;
  uint64_t* values_ = nullptr;
  uint32_t* value_lens_ = nullptr;
  uint64_t* expected_ = nullptr;
  uint64_t* expire_ = nullptr;
  ExpireCondition* conditions_ = nullptr;
  char* key_bytes_ = nullptr;
  char* value_bytes_ = nullptr;
};

}  // namespace kvcg
