// Human-readable numbers for tables and summaries.
#pragma once

#include <cstdint>
#include <string>

namespace gpumem::cli {

// "0 B", "512 B", "1.5 KiB", "150.0 MiB", "79.6 GiB": the library's byte_size_text
// (gpumem/internal/byte_size.hpp), the one way gpumem shows a byte count.
std::string format_bytes(std::int64_t bytes);
// "1.234 s", "12 ms"
std::string format_seconds(double seconds);
// `part` as a share of `whole`: "66.7%"; "-" when `whole` is not above zero.
std::string format_share(std::int64_t part, std::int64_t whole);

}  // namespace gpumem::cli
