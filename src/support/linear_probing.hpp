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

// The same for a table of any size (its probes wrap at the end rather than by a mask);
// `moved(from, to)` is told of each member shifted, before it moves.
template <class Slot, class Home, class Moved>
inline void erase_by_backward_shift_any_size(std::vector<Slot>& slots, std::size_t hole,
                                             const Home& home, const Moved& moved) noexcept {
  const std::size_t size = slots.size();
  const auto after = [size](std::size_t i) { return i + 1 == size ? 0 : i + 1; };
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
