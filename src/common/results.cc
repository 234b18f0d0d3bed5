// Results::ToOwned, Prefetch and Replace, and ResultsBuilder (kvcg/results.h).
//
// ResultsBuilder keeps codes, views and one value arena in a single Owner,
// allocated once per batch (never per op). Copied values are recorded as
// arena offsets and turned into pointers at Finish(), because the arena may
// move while it grows.
#include "kvcg/results.h"

#include "common/prefetch.h"

namespace kvcg {

std::vector<OpResult> Results::ToOwned() const {
  std::vector<OpResult> out(n_);
  for (size_t i = 0; i < n_; ++i) {
    out[i].code = code(i);
    out[i].value.assign(value(i));
    out[i].expire_at = expire_at(i);
  }
  return out;
}

void Results::Prefetch(size_t begin, size_t end) const {
  if (end > n_) end = n_;
  if (slot_lens_ != nullptr) {
    // Slots are in order, but a device wrote them: not in this core's
    // caches, and read too sparsely for the hardware to stream them.
    for (size_t i = begin; i < end; ++i) {
      if (codes_[i] == Code::kOk) PrefetchLine(slots_ + i * kValueSlotBytes);
    }
  } else if (views_ != nullptr) {
    for (size_t i = begin; i < end; ++i) {
      if (codes_[i] == Code::kOk) PrefetchLine(views_[i].data);
    }
  }
}

bool Results::Replace(size_t i, Code code, std::string_view value, uint64_t expire_at) {
  if (i >= n_) return false;
  const bool found = code == Code::kOk;
  if (found && expire_at != kNoExpiryAt && expires_ == nullptr) return false;
  if (found && words_ != nullptr && value.size() != 8) return false;
  if (found && words_ == nullptr && slot_lens_ == nullptr && views_ == nullptr) return false;
  // The columns are the producing store's writable memory (see the header).
  if (found) {
    if (words_ != nullptr) {
      std::memcpy(const_cast<uint64_t*>(words_) + i, value.data(), 8);
    } else if (slot_lens_ != nullptr) {
      char* slot = const_cast<char*>(slots_) + i * kValueSlotBytes;
      uint8_t* len = const_cast<uint8_t*>(slot_lens_) + i;
      if (value.size() < kSlotHoldsView && value.size() <= kValueSlotBytes) {
        if (!value.empty()) std::memcpy(slot, value.data(), value.size());
        *len = uint8_t(value.size());
      } else {
        const ValueRef ref{value.data(), value.size()};
        std::memcpy(slot, &ref, sizeof ref);
        *len = kSlotHoldsView;
      }
    } else {
      const_cast<ValueRef*>(views_)[i] = ValueRef{value.data(), value.size()};
    }
  }
  if (expires_ != nullptr) const_cast<uint64_t*>(expires_)[i] = found ? expire_at : kNoExpiryAt;
  const_cast<Code*>(codes_)[i] = code;
  return true;
}

void Results::Adopt(std::unique_ptr<Owner> extra) {
  if (extra == nullptr) return;
  if (owner_ == nullptr) {
    owner_.reset(extra.release());
    return;
  }
  // Both owners in one: the store's first, then the extra one.
  struct Both final : Owner {
    std::unique_ptr<Owner, OwnerDone> first, second;
    ~Both() override {
      first.reset();
      second.reset();
    }
  };
  auto* both = new Both;
  both->first = std::move(owner_);
  both->second.reset(extra.release());
  owner_.reset(both);
}

namespace {
constexpr uint64_t kAbsolute = ~uint64_t(0);

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycle = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif
#else
constexpr bool kRecycle = true;
#endif
// Per thread: storages kept for reuse, and the largest arena kept.
constexpr size_t kCachedStorages = 8;
constexpr size_t kMaxKeptArena = size_t(1) << 20;
}  // namespace

struct ResultsBuilder::Storage final : Results::Owner {
  std::vector<Code> codes;
  std::vector<ValueRef> views;
  std::vector<uint64_t> offsets;  // arena offset of a copied value, or kAbsolute
  std::vector<uint64_t> expires;  // sized only once a result has an expire-at
  std::string arena;
  std::vector<Results> kept;

  static std::vector<std::unique_ptr<Storage>>& Cache() {
    thread_local std::vector<std::unique_ptr<Storage>> cache;
    return cache;
  }
  static std::unique_ptr<Storage> Take() {
    auto& cache = Cache();
    if (cache.empty()) return std::make_unique<Storage>();
    std::unique_ptr<Storage> s = std::move(cache.back());
    cache.pop_back();
    return s;
  }
  void Done() override {
    kept.clear();  // inner Results go now, as they would on delete
    auto& cache = Cache();
    if (!kRecycle || cache.size() >= kCachedStorages || arena.capacity() > kMaxKeptArena) {
      delete this;
      return;
    }
    cache.emplace_back(this);
  }
};

ResultsBuilder::ResultsBuilder() = default;
ResultsBuilder::~ResultsBuilder() = default;
ResultsBuilder::ResultsBuilder(ResultsBuilder&&) noexcept = default;
ResultsBuilder& ResultsBuilder::operator=(ResultsBuilder&&) noexcept = default;

void ResultsBuilder::Reset(size_t n) {
  if (!s_) s_ = Storage::Take();
  s_->codes.assign(n, Code::kNotFound);
  s_->views.assign(n, ValueRef{nullptr, 0});
  s_->offsets.assign(n, kAbsolute);
  s_->expires.clear();
  s_->arena.clear();
  s_->kept.clear();
}

size_t ResultsBuilder::size() const { return s_ ? s_->codes.size() : 0; }
Code ResultsBuilder::code(size_t i) const { return s_->codes[i]; }
void ResultsBuilder::SetExpire(size_t i, uint64_t expire_at) {
  if (s_->expires.empty()) {
    if (expire_at == 0) return;
    s_->expires.assign(s_->codes.size(), 0);
  }
  s_->expires[i] = expire_at;
}

void ResultsBuilder::SetCode(size_t i, Code code) {
  if (!s_->expires.empty()) s_->expires[i] = 0;
  s_->codes[i] = code;
  s_->views[i] = ValueRef{nullptr, 0};
  s_->offsets[i] = kAbsolute;
}

void ResultsBuilder::SetValue(size_t i, Code code, std::string_view value) {
  if (!s_->expires.empty()) s_->expires[i] = 0;
  s_->codes[i] = code;
  s_->offsets[i] = s_->arena.size();
  s_->views[i] = ValueRef{nullptr, value.size()};
  s_->arena.append(value);
}

void ResultsBuilder::SetView(size_t i, Code code, std::string_view value) {
  if (!s_->expires.empty()) s_->expires[i] = 0;
  s_->codes[i] = code;
  s_->offsets[i] = kAbsolute;
  s_->views[i] = ValueRef{value.data(), value.size()};
}

void ResultsBuilder::SetView(size_t i, const OpResultView& r) {
  SetView(i, r.code, r.value);
  SetExpire(i, r.expire_at);
}

void ResultsBuilder::Keep(Results&& inner) { s_->kept.push_back(std::move(inner)); }

Results ResultsBuilder::Peek() {
  if (!s_) return Results();
  Storage& s = *s_;
  // Copied values' views point into the arena as it is now; Finish (or a
  // later Peek) points them again if the arena moved.
  for (size_t i = 0; i < s.views.size(); ++i) {
    if (s.offsets[i] != kAbsolute) s.views[i].data = s.arena.data() + s.offsets[i];
  }
  return Results(s.codes.size(), s.codes.data(), s.views.data(), nullptr,
                 s.expires.empty() ? nullptr : s.expires.data());
}

Results ResultsBuilder::Finish() {
  if (!s_) s_ = Storage::Take();
  Results view = Peek();
  const Code* codes = view.codes();
  const uint64_t* expires = view.expires();
  const size_t n = view.size();
  const ValueRef* views = s_->views.data();
  return Results(n, codes, views, std::move(s_), expires);
}

}  // namespace kvcg
