// The deletion of an open-addressed hash table with linear probing, shared by the tables that
// keep live blocks (the exact source's address map, attribution's block table).
#pragma once

#include <cstddef>

namespace gpumem::support {

// Empties `slots[hole]`, a member of a table whose empty slots have key 0, and shifts the later
// members of its cluster back over the hole where their home slot (`home` of their key) allows:
// no tombstone is left, so a lookup still stops at the first empty slot. `after(i)` is the slot
// a probe visits after slot i (a mask for a power-of-two size, a wrap at the end for any other);
// `moved(from, to)` is told of each member shifted, before it moves.
template <class Slot, class After, class Home, class Moved>
[[gnu::always_inline]] inline void erase_by_backward_shift(Slot* slots, std::size_t hole,
                                                           const After& after, const Home& home,
                                                           const Moved& moved) noexcept {
  for (std::size_t next = after(hole); slots[next].key != 0; next = after(next)) {
    const std::size_t wanted = home(slots[next].key);
    const bool movable =
        hole <= next ? (wanted <= hole || wanted > next) : (wanted <= hole && wanted > next);
    if (movable) {
      moved(next, hole);
      slots[hole] = slots[next];
      hole = next;
    }
  }
  slots[hole] = Slot{};
}

}  // namespace gpumem::support
