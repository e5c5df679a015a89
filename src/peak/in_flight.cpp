#include "peak/in_flight.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace gpumem::peak::in_flight {

using detail::kDepthMask;
using detail::kLeft;
using detail::Slot;

[[gnu::tls_model("initial-exec")]] constinit thread_local Slot* detail::t_slot = nullptr;

namespace {

constexpr int kSlots = 512;

struct Table {
  Slot slots[kSlots];
  std::atomic<int> used{0};  // slots handed out so far (never given back)
  Slot overflow;             // shared by threads beyond kSlots (its own line: Slot is aligned)
  Table() { overflow.shared = true; }
};

Table& table() noexcept {
  static Table* const instance = new Table;  // never destroyed: callbacks may come during exit
  return *instance;
}

// Threads beyond kSlots share the overflow counter.
Slot& own_slot() noexcept {
  if (detail::t_slot != nullptr) [[likely]] {
    return *detail::t_slot;
  }
  Table& t = table();
  const int index = t.used.fetch_add(1, std::memory_order_relaxed);
  detail::t_slot = index < kSlots ? &t.slots[index] : &t.overflow;
  return *detail::t_slot;
}

}  // namespace

// A thread's first call, or every call of a thread beyond the table's slots.
bool detail::enter_slow() noexcept {
  Slot& slot = own_slot();
  if (slot.shared) {
    slot.word.fetch_add(1, std::memory_order_seq_cst);
    return true;
  }
  return enter();
}

bool detail::leave_slow() noexcept {
  Slot& slot = own_slot();
  if (!slot.shared) return leave();
  std::uint64_t word = slot.word.load(std::memory_order_relaxed);
  while ((word & kDepthMask) != 0 && !slot.word.compare_exchange_weak(word, word + kLeft)) {
  }
  return (word & kDepthMask) != 0;
}

std::optional<std::uint64_t> quiet_generation() noexcept {
  // Pairs with enter()'s fence: a charge this thread saw in NVML shows its call's slot too.
  std::atomic_thread_fence(std::memory_order_acquire);
  Table& t = table();
  const int used = std::min(t.used.load(std::memory_order_relaxed), kSlots);
  std::uint64_t generation = 0;
  for (int i = 0; i < used; ++i) {
    if (&t.slots[i] == detail::t_slot) continue;
    const std::uint64_t word = t.slots[i].word.load(std::memory_order_relaxed);
    if ((word & kDepthMask) != 0) return std::nullopt;
    generation += word >> 16;
  }
  const std::uint64_t word = t.overflow.word.load(std::memory_order_relaxed);
  if ((word & kDepthMask) != 0) return std::nullopt;
  return generation + (word >> 16);
}

void reset() noexcept {
  // Only the calls in flight are forgotten: the generations stay, so a reading that spans the
  // reset is still refused if a call left meanwhile.
  Table& t = table();
  for (Slot& slot : t.slots)
    slot.word.store(slot.word.load(std::memory_order_relaxed) & ~kDepthMask,
                    std::memory_order_relaxed);
  std::uint64_t word = t.overflow.word.load(std::memory_order_relaxed);
  while (!t.overflow.word.compare_exchange_weak(word, word & ~kDepthMask)) {
  }
}

}  // namespace gpumem::peak::in_flight
