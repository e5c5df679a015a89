#include "gpumem/internal/exact_ledger.hpp"

#include <new>

#include "peak/channels.hpp"

namespace gpumem::detail {

static_assert(kLedgerOrdinals == peak::kMaxDevices, "one word per exact channel");

bool place_exact_ledger(const LedgerPlacement& placement, LedgerStart start) noexcept {
  if (placement.words == nullptr || placement.mirror == nullptr) return false;
  // Never freed: an event may still be reading a home it loaded before the next placement.
  auto* homes = new (std::nothrow) peak::Channel::Home[kLedgerOrdinals];
  if (homes == nullptr) return false;
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
