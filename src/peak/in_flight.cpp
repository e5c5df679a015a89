#include "peak/in_flight.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace gpumem::peak::in_flight {
namespace {

constexpr int kSlots = 512;
// A slot's word: calls in flight in the low 16 bits, calls left (the generation) above. Leaving
// adds kLeft: one call fewer in flight, the generation one higher.
constexpr std::uint64_t kDepthMask = 0xffff;
constexpr std::uint64_t kLeft = (std::uint64_t{1} << 16) - 1;

struct alignas(64) Slot {
  std::atomic<std::uint64_t> word{0};
};

struct Table {
  Slot slots[kSlots];
  std::atomic<int> used{0};   // slots handed out so far (never given back)
  alignas(64) Slot overflow;  // shared by threads beyond kSlots
};

Table& table() noexcept {
  static Table* const instance = new Table;  // never destroyed: callbacks may come during exit
  return *instance;
}

// No destructor (a thread_local with one misbehaves in a dlopen'ed library at exit): a slot
// stays with its thread's memory of it, and threads beyond kSlots share the overflow counter.
[[gnu::tls_model("initial-exec")]] thread_local Slot* t_slot = nullptr;

Slot& own_slot() noexcept {
  if (t_slot != nullptr) [[likely]] {
    return *t_slot;
  }
  Table& t = table();
  const int index = t.used.fetch_add(1, std::memory_order_relaxed);
  t_slot = index < kSlots ? &t.slots[index] : &t.overflow;
  return *t_slot;
}

}  // namespace

void enter() noexcept {
  Slot& slot = own_slot();
  if (&slot == &table().overflow) {
    slot.word.fetch_add(1, std::memory_order_seq_cst);
    return;
  }
  slot.word.store(slot.word.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // The driver's charge (a later store of this thread) must not become visible before this: a
  // release fence orders it before every later store (free on x86, one barrier on aarch64).
  std::atomic_thread_fence(std::memory_order_release);
}

bool leave() noexcept {
  Slot& slot = own_slot();
  if (&slot == &table().overflow) {
    std::uint64_t word = slot.word.load(std::memory_order_relaxed);
    while ((word & kDepthMask) != 0 && !slot.word.compare_exchange_weak(word, word + kLeft)) {
    }
    return (word & kDepthMask) != 0;
  }
  const std::uint64_t word = slot.word.load(std::memory_order_relaxed);
  if ((word & kDepthMask) == 0) return false;
  slot.word.store(word + kLeft, std::memory_order_release);
  return true;
}

std::optional<std::uint64_t> quiet_generation() noexcept {
  // Pairs with enter()'s fence: a charge this thread saw in NVML shows its call's slot too.
  std::atomic_thread_fence(std::memory_order_acquire);
  Table& t = table();
  const int used = std::min(t.used.load(std::memory_order_relaxed), kSlots);
  std::uint64_t generation = 0;
  for (int i = 0; i < used; ++i) {
    if (&t.slots[i] == t_slot) continue;
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
