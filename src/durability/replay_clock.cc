// ReplayClock (replay_clock.h): a fixed table of clock functions, one per
// slot, each reading its slot's frozen time or its real clock.
#include "durability/replay_clock.h"

#include <array>
#include <atomic>
#include <utility>

namespace kvcg::durability {

namespace {

constexpr int kSlots = 256;  // stores with persistence open at once in one process

struct Slot {
  std::atomic<bool> used{false};
  std::atomic<ClockFunction> real{&SystemClockMs};
  std::atomic<uint64_t> frozen{0};  // 0: not frozen
};
Slot g_slots[kSlots];

template <int I>
uint64_t SlotClock() {
  const uint64_t t = g_slots[I].frozen.load(std::memory_order_acquire);
  return t != 0 ? t : g_slots[I].real.load(std::memory_order_relaxed)();
}

template <int... I>
constexpr std::array<ClockFunction, sizeof...(I)> MakeTable(std::integer_sequence<int, I...>) {
  return {&SlotClock<I>...};
}
constexpr auto kFunctions = MakeTable(std::make_integer_sequence<int, kSlots>());

}  // namespace

std::unique_ptr<ReplayClock> ReplayClock::Acquire(ClockFunction real) {
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_slots[i].used.load(std::memory_order_relaxed) &&
        g_slots[i].used.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      g_slots[i].real.store(real, std::memory_order_relaxed);
      g_slots[i].frozen.store(0, std::memory_order_release);
      return std::unique_ptr<ReplayClock>(new ReplayClock(i));
    }
  }
  return nullptr;
}

ReplayClock::~ReplayClock() {
  g_slots[slot_].frozen.store(0, std::memory_order_relaxed);
  g_slots[slot_].used.store(false, std::memory_order_release);
}

ClockFunction ReplayClock::function() const { return kFunctions[size_t(slot_)]; }

void ReplayClock::Freeze(uint64_t now_ms) {
  g_slots[slot_].frozen.store(now_ms == 0 ? 1 : now_ms, std::memory_order_release);
}

void ReplayClock::Thaw() { g_slots[slot_].frozen.store(0, std::memory_order_release); }

bool ReplayClock::frozen() const {
  return g_slots[slot_].frozen.load(std::memory_order_acquire) != 0;
}

}  // namespace kvcg::durability
