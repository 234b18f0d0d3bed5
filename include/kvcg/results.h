// kvcg/results.h — the results of one batch, as columns of borrowed views.
//
// A Store's completion receives a Results: one Code and one value view per
// operation, in batch order. Nothing is copied per operation on the way:
// on the GPU backend, codes and views are written by the GPU into
// page-locked memory, and a view points straight at the value in the
// store's host value heap (or, for a value of up to 64 bytes read by a
// GET of a large batch, at the copy the GPU wrote into a value slot next
// to the codes: see the slot constructor below); on
// the CPU backend, values are copied once into one arena per batch.
//
// Lifetimes (as LevelDB's Slice). The bytes a view points to stay valid and
// unchanged until the Results that produced it is destroyed or Release()d —
// even if a later operation overwrites or deletes the key: the store keeps a
// replaced value until every Results that can point at it is gone (the GPU
// backend reclaims by epochs, see store/gpu/result_epochs.h). So:
//   * read or copy a value before releasing its Results;
//   * release promptly: a Results held forever pins the memory of every
//     value replaced after it (the store does not fail, it grows).
// Using a view after its release is undefined (ASan catches it in the CPU
// build's tests). A Results must be released before the Store that produced
// it is destroyed (on the GPU backend its views point into the store's
// memory).
//
// A Results is move-only and not thread-safe; it may be moved to and
// released on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvcg/status.h"

namespace kvcg {

// A borrowed value: `size` bytes at `data`. Trivially copyable, so the GPU
// writes it directly.
struct ValueRef {
  const char* data;
  uint64_t size;
};

// Value slots (see the slot constructor of Results): each is
// kValueSlotBytes long; a length of kSlotHoldsView means the slot holds a
// ValueRef to the value instead of the value.
constexpr size_t kValueSlotBytes = 64;
constexpr uint8_t kSlotHoldsView = 0xFF;

// The outcome of one operation, owning its value (for simple callers and
// tests; the batch path hands out OpResultView instead).
//   code == kOk:       GET found the key; PUT/DELETE replaced/removed a value.
//                      `value` holds the value read (GET) or the previous value.
//   code == kNotFound: the key was absent. A PUT still stored its value.
//   any other code:    an error; the operation changed nothing and `value` is empty.
//   expire_at:         the expire-at of that value (kvcg/batch.h, Expiry):
//                      kNoExpiry when it had none or nothing was found.
struct OpResult {
  Code code = Code::kOk;
  std::string value;
  uint64_t expire_at = 0;

  bool found() const { return code == Code::kOk; }
  // True for the two normal outcomes (kOk, kNotFound).
  bool succeeded() const { return code == Code::kOk || code == Code::kNotFound; }
};

// The same, borrowing its value from a Results (valid as long as it is).
struct OpResultView {
  Code code = Code::kOk;
  std::string_view value;
  uint64_t expire_at = 0;

  bool found() const { return code == Code::kOk; }
  bool succeeded() const { return code == Code::kOk || code == Code::kNotFound; }
  OpResult ToOwned() const { return OpResult{code, std::string(value), expire_at}; }
};

class Results {
 public:
  // Keeps alive whatever the columns and views point into; destroyed (on
  // any thread) when the Results is released. Backends subclass it.
  class Owner {
   public:
    virtual ~Owner() = default;
    // Called once when the Results lets go. Deletes by default; an owner
    // may recycle itself instead (ResultsBuilder does, per thread).
    virtual void Done() { delete this; }
  };

  Results() = default;
  // n results: codes[i], and views[i] (kOk only; others are read as empty);
  // expires[i] the value's expire-at (kOk only; null: none has one).
  Results(size_t n, const Code* codes, const ValueRef* views, std::unique_ptr<Owner> owner,
          const uint64_t* expires = nullptr)
      : n_(n), codes_(codes), views_(views), expires_(expires), owner_(owner.release()) {}
  // Fixed-width values: result i's value is the 8 bytes of words[i] when
  // codes[i] is kOk (Layout::kFixed8 stores no expiry).
  Results(size_t n, const Code* codes, const uint64_t* words, std::unique_ptr<Owner> owner)
      : n_(n), codes_(codes), words_(words), owner_(owner.release()) {}
  // Values in slots (the GPU store's large general ARBs): result i's value
  // (kOk only) is the first slot_lens[i] bytes of the kValueSlotBytes-byte
  // slot at slots + i * kValueSlotBytes, or — slot_lens[i] ==
  // kSlotHoldsView — the bytes of the ValueRef stored at the slot's start.
  // Why: short values travel in the results, so a consumer reads them in
  // order instead of at a random place of the store's heap, and no 16-byte
  // view per op is written, sent and read (docs/BENCHMARKS.md 2m, 2o).
  Results(size_t n, const Code* codes, const uint8_t* slot_lens, const char* slots,
          std::unique_ptr<Owner> owner, const uint64_t* expires = nullptr)
      : n_(n), codes_(codes), slot_lens_(slot_lens), slots_(slots), expires_(expires),
        owner_(owner.release()) {}
  ~Results() = default;
  Results(Results&& other) noexcept { *this = std::move(other); }
  Results& operator=(Results&& other) noexcept {
    if (this != &other) {
      owner_ = std::move(other.owner_);
      n_ = other.n_;
      codes_ = other.codes_;
      views_ = other.views_;
      words_ = other.words_;
      slot_lens_ = other.slot_lens_;
      slots_ = other.slots_;
      expires_ = other.expires_;
      other.n_ = 0;
      other.codes_ = nullptr;
      other.views_ = nullptr;
      other.words_ = nullptr;
      other.slot_lens_ = nullptr;
      other.slots_ = nullptr;
      other.expires_ = nullptr;
    }
    return *this;
  }
  Results(const Results&) = delete;
  Results& operator=(const Results&) = delete;

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Code code(size_t i) const { return codes_[i]; }
  bool found(size_t i) const { return codes_[i] == Code::kOk; }
  // The value read (GET) or replaced (PUT, DELETE, CAS); empty unless found(i).
  std::string_view value(size_t i) const {
    if (codes_[i] != Code::kOk) return {};
    if (words_ != nullptr) return {reinterpret_cast<const char*>(words_ + i), 8};
    if (slot_lens_ != nullptr) {
      const char* slot = slots_ + i * kValueSlotBytes;
      if (slot_lens_[i] != kSlotHoldsView) return {slot, slot_lens_[i]};
      ValueRef ref;
      std::memcpy(&ref, slot, sizeof ref);
      return {ref.data, size_t(ref.size)};
    }
    return {views_[i].data, size_t(views_[i].size)};
  }
  // A hint, for a consumer about to read the values of results [begin,
  // end) one after another: starts loading the bytes of those held
  // elsewhere (views into a store's heap) so that their cache misses
  // overlap instead of coming one at a time. Changes nothing observable;
  // end is clamped to size().
  void Prefetch(size_t begin, size_t end) const;
  // The expire-at of that value; kNoExpiry unless found(i) and it has one.
  uint64_t expire_at(size_t i) const {
    return expires_ != nullptr && codes_[i] == Code::kOk ? expires_[i] : kNoExpiryAt;
  }
  OpResultView operator[](size_t i) const { return {code(i), value(i), expire_at(i)}; }

  // Copies every result (tests, simple callers).
  std::vector<OpResult> ToOwned() const;

  // --- For a producer that answered some ops of a batch itself and had a
  // store run the batch with those ops turned into OpType::kNoop (the KVCG
  // engine's hot-cache hits): it writes its answers over the store's.
  //
  // Replaces result i by `code` and, when code is kOk, `value` with its
  // expire-at. The bytes are copied where the result holds values in place
  // (fixed-width words, value slots of up to kValueSlotBytes); otherwise
  // the result views them, so they must live as long as this Results: hand
  // their owner to Adopt. Returns false and changes nothing when this
  // Results cannot hold the answer: i past the last result, a fixed-width
  // Results and a value that is not 8 bytes, an expire-at and no expire
  // column, or no value column at all. Only on a Results a Store produced
  // (its columns are the store's writable memory), before anyone reads it;
  // not thread-safe.
  bool Replace(size_t i, Code code, std::string_view value, uint64_t expire_at);
  // Keeps `extra` alive as long as this Results too (it is released after
  // the Results' own owner).
  void Adopt(std::unique_ptr<Owner> extra);

  // Ends the lease: every view of this Results dies. Idempotent; also done
  // by the destructor.
  void Release() {
    owner_.reset();
    n_ = 0;
    codes_ = nullptr;
    views_ = nullptr;
    words_ = nullptr;
    slot_lens_ = nullptr;
    slots_ = nullptr;
    expires_ = nullptr;
  }

  // The columns, for consumers that move results on as columns.
  const Code* codes() const { return codes_; }
  // Expire-at per op (valid where found(i)), or null when no value has one.
  const uint64_t* expires() const { return expires_; }

 private:
  size_t n_ = 0;
  const Code* codes_ = nullptr;
  const ValueRef* views_ = nullptr;
  const uint64_t* words_ = nullptr;
  const uint8_t* slot_lens_ = nullptr;
  const char* slots_ = nullptr;
  const uint64_t* expires_ = nullptr;
  static constexpr uint64_t kNoExpiryAt = 0;  // = kNoExpiry (kvcg/batch.h)
  struct OwnerDone {
    void operator()(Owner* o) const { o->Done(); }
  };
  std::unique_ptr<Owner, OwnerDone> owner_;
};

// Results [begin, begin + count) of a Results: what one command of a
// pipeline (or one part of a batch) reads. Iterable.
class ResultSpan {
 public:
  ResultSpan() = default;
  ResultSpan(const Results* r, size_t begin, size_t count) : r_(r), begin_(begin), n_(count) {}
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  OpResultView operator[](size_t i) const { return (*r_)[begin_ + i]; }

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = OpResultView;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = OpResultView;
    iterator(const ResultSpan* s, size_t i) : s_(s), i_(i) {}
    OpResultView operator*() const { return (*s_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }

   private:
    const ResultSpan* s_;
    size_t i_;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, n_}; }

 private:
  const Results* r_ = nullptr;
  size_t begin_ = 0, n_ = 0;
};

// A Results whose storage is owned here: a code and a view per op and one
// arena for value bytes. The CPU backend and the engine build their results
// in it; Finish() hands it over as a Results without copying. Appending a
// value copies it into the arena; views into the arena are fixed up at
// Finish (the arena may move while growing). Storage is recycled: a
// released Results returns it to a small cache of the releasing thread, so
// a loop of Execute calls allocates nothing per batch once warm (except
// under AddressSanitizer, which must see a view used after its release).
// One writer at a time.
class ResultsBuilder {
 public:
  ResultsBuilder();
  ~ResultsBuilder();
  ResultsBuilder(ResultsBuilder&&) noexcept;
  ResultsBuilder& operator=(ResultsBuilder&&) noexcept;
  // Starts n results, every code kNotFound and every value empty.
  void Reset(size_t n);
  size_t size() const;
  Code code(size_t i) const;
  void SetCode(size_t i, Code code);
  // Code and a copy of the value.
  void SetValue(size_t i, Code code, std::string_view value);
  // Code and a view of bytes that `keep` keeps alive (e.g. an inner
  // store's Results), no copy. Keep() before the view's owner goes away.
  void SetView(size_t i, Code code, std::string_view value);
  // Result i as `r` is: its code, a view of its value and its expire-at (r
  // from a Results that Keep() keeps alive).
  void SetView(size_t i, const OpResultView& r);
  // The expire-at of result i's value (after SetValue/SetView; SetCode and
  // SetValue/SetView reset it to none).
  void SetExpire(size_t i, uint64_t expire_at);
  void Keep(Results&& inner);
  // A look at the results set so far, owning nothing: valid until the
  // builder is next changed, finished or destroyed; results not yet set
  // read as kNotFound. For a producer that lets its consumer read some
  // answers before the batch is complete (Store::SubmitWithEarlyAnswers).
  Results Peek();
  // Hands the results over. The builder is empty afterwards.
  Results Finish();

 private:
  struct Storage;
  std::unique_ptr<Storage> s_;
};

}  // namespace kvcg
