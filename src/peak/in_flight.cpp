#include "peak/in_flight.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace gpumem::peak::in_flight {
namespace {

constexpr int kSlots = 512;

struct alignas(64) Slot {
  std::atomic<std::int32_t> calls{0};
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
    slot.calls.fetch_add(1, std::memory_order_seq_cst);
    return;
  }
  slot.calls.store(slot.calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // The driver's charge (a later store of this thread) must not become visible before this: a
  // release fence orders it before every later store (free on x86, one barrier on aarch64).
  std::atomic_thread_fence(std::memory_order_release);
}

void leave() noexcept {
  Slot& slot = own_slot();
  if (&slot == &table().overflow) {
    std::int32_t calls = slot.calls.load(std::memory_order_relaxed);
    while (calls > 0 && !slot.calls.compare_exchange_weak(calls, calls - 1)) {
    }
    return;
  }
  const std::int32_t calls = slot.calls.load(std::memory_order_relaxed);
  if (calls > 0) slot.calls.store(calls - 1, std::memory_order_release);
}

bool quiet() noexcept {
  // Pairs with enter()'s fence: a charge this thread saw in NVML shows its call's slot too.
  std::atomic_thread_fence(std::memory_order_acquire);
  Table& t = table();
  const int used = std::min(t.used.load(std::memory_order_relaxed), kSlots);
  for (int i = 0; i < used; ++i) {
    if (&t.slots[i] != t_slot && t.slots[i].calls.load(std::memory_order_relaxed) != 0) {
      return false;
    }
  }
  return t.overflow.calls.load(std::memory_order_relaxed) == 0;
}

void reset() noexcept {
  Table& t = table();
  for (Slot& slot : t.slots) slot.calls.store(0, std::memory_order_relaxed);
  t.overflow.calls.store(0, std::memory_order_relaxed);
}

}  // namespace gpumem::peak::in_flight
