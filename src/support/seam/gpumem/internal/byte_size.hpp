// Sizes as people write them ("2 GiB", "1.5GB", "512 MiB"): the one parser of a byte size, used
// by `gpumem run --max-peak` and the pytest plugin's markers (through the Python binding), and
// the one way a byte count is shown in words, used by every view of the gpumem command and by
// ScopedPeakBudget's message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// A seam for gpumem's own tools (the gpumem_internal target): exported from libgpumem.so so that
// they share its engine, never installed.
#pragma GCC visibility push(default)

namespace gpumem::detail {

// `text` as bytes: a number (a decimal fraction allowed) and a unit, with or without a space
// between: B; kB, MB, GB, TB (powers of 1000); KiB, MiB, GiB, TiB (powers of 1024). Units are
// case-insensitive but for the `i`, which tells binary from decimal ("gib" is GiB, "gb" GB).
// The result is rounded down to a whole byte. nullopt with `error` saying what is wrong ("no
// unit: write 2 GiB or 2 GB", "unknown unit 'GiBs'", "not a number") for anything else: a
// negative or non-finite number, a size beyond 2^63 - 1 bytes, no unit, text after it. Never
// throws.
std::optional<std::uint64_t> parse_byte_size(std::string_view text, std::string* error) noexcept;

// `bytes` for people: "0 B", "512 B", "-1023 B" below 1024, else one decimal of the largest binary
// unit up to TiB that keeps the figure under 1024: "1.5 KiB", "150.0 MiB", "79.6 GiB",
// "-2.0 KiB". Throws only std::bad_alloc.
std::string byte_size_text(std::int64_t bytes);

}  // namespace gpumem::detail

#pragma GCC visibility pop
