#include "gpumem/internal/exact_ledger.hpp"

#include <atomic>
#include <new>

#include "peak/channels.hpp"

namespace gpumem::detail {

static_assert(kLedgerOrdinals == peak::kMaxDevices, "one word per exact channel");

namespace {

// Each placement's homes, never freed (an event may still be reading one it loaded before the
// next placement), and each kept reachable from the last: placements are few (a process's own, a
// forked child's).
struct Placement {
  peak::Channel::Home homes[kLedgerOrdinals];
  const Placement* earlier;
};
std::atomic<const Placement*> g_placements{nullptr};

}  // namespace

bool place_exact_ledger(const LedgerPlacement& placement, LedgerStart start) noexcept {
  if (placement.words == nullptr || placement.mirror == nullptr) return false;
  auto* made = new (std::nothrow) Placement;
  if (made == nullptr) return false;
  made->earlier = g_placements.exchange(made, std::memory_order_acq_rel);
  peak::Channel::Home* homes = made->homes;
  for (int ordinal = 0; ordinal < kLedgerOrdinals; ++ordinal) {
    homes[ordinal] = {&placement.words[ordinal], placement.mirror, placement.ctx, ordinal};
    peak::channel(peak::Stream::exact, ordinal)
        ->place(&homes[ordinal], start == LedgerStart::carry,
                /*locked=*/start != LedgerStart::empty_in_forked_child);
  }
  return true;
}

void unplace_exact_ledger(bool in_forked_child) noexcept {
  for (int ordinal = 0; ordinal < kLedgerOrdinals; ++ordinal) {
    peak::channel(peak::Stream::exact, ordinal)
        ->place(nullptr, /*carry_level=*/true, /*locked=*/!in_forked_child);
  }
}

std::int64_t ledger_level(std::uint64_t word) noexcept {
  return peak::Channel::level_of_word(word);
}

std::int64_t take_ledger_level(std::atomic<std::uint64_t>& word) noexcept {
  std::uint64_t now = word.load(std::memory_order_relaxed);
  while (!word.compare_exchange_weak(now, peak::Channel::emptied(now), std::memory_order_relaxed)) {
  }
  return peak::Channel::level_of_word(now);
}

}  // namespace gpumem::detail
