// The deletion of an open-addressed hash table with linear probing, shared by the tables that
// keep live blocks (the exact source's address map, attribution's block table).
#pragma once

#include <cstddef>
#include <vector>

namespace gpumem::support {

// Empties `slots[hole]`, a member of a table of a power-of-two size whose empty slots have key 0,
// and shifts the later members of its cluster back over the hole where their home slot (`home`
// of their key) allows: no tombstone is left, so a lookup still stops at the first empty slot.
// `slots` holds mask + 1 slots.
template <class Slot, class Home>
[[gnu::always_inline]] inline void erase_by_backward_shift(Slot* slots, std::size_t mask,
                                                           std::size_t hole,
                                                           const Home& home) noexcept {
  for (std::size_t next = (hole + 1) & mask; slots[next].key != 0; next = (next + 1) & mask) {
    const std::size_t wanted = home(slots[next].key);
    const bool movable =
        hole <= next ? (wanted <= hole || wanted > next) : (wanted <= hole && wanted > next);
    if (movable) {
      slots[hole] = slots[next];
      hole = next;
    }
  }
  slots[hole] = Slot{};
}

template <class Slot, class Home>
[[gnu::always_inline]] inline void erase_by_backward_shift(std::vector<Slot>& slots,
                                                           std::size_t hole,
                                                           const Home& home) noexcept {
  erase_by_backward_shift(slots.data(), slots.size() - 1, hole, home);
}

}  // namespace gpumem::support
