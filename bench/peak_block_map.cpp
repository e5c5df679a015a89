// The exact source's block map (src/peak/address_map.hpp) under random churn: with N live blocks
// (1k … 1M), free a random live block and allocate a new one at a random address, beside a
// random-access floor over the same memory (one random 16-byte read-modify-write per event)
// timed in paired rounds in the same run; then the map's memory with the blocks live and after
// they are freed (it shrinks). docs/peaks.md has the command and the figures.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "churn_rounds.hpp"
#include "peak/address_map.hpp"

namespace {

using namespace gpumem;

constexpr int kRounds = 9;

void BM_BlockMapChurn(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  bench::AddressStream addresses;
  std::vector<std::uint64_t> keys(live);
  peak::AddressMap map;
  for (std::uint64_t& key : keys) {
    key = addresses.next();
    map.insert(key, {4096, 0, false});
  }
  bench::IndexPicker picks(live);
  bench::ChurnFloor floor(map.memory_bytes(), keys, picks);
  // Events per round: enough to leave the caches' warm-up behind at every size.
  const std::int64_t events = std::max<std::int64_t>(200'000, static_cast<std::int64_t>(live));
  std::uint64_t sink = 0;
  for (auto _ : state) {
    const bench::RoundFigures figures = bench::paired_rounds(
        kRounds, events, [&](std::int64_t count) { sink += floor(count); },
        [&](std::int64_t count) {
          // The loop's state in locals, as the floor's (bench/churn_rounds.hpp).
          bench::IndexPicker next = picks;
          std::uint64_t kept = 0;
          for (std::int64_t i = 0; i < count; i += 2) {
            std::uint64_t& key = keys[next.next()];
            if (const auto block = map.erase(key)) kept += block->size;
            key = addresses.next();
            map.insert(key, {4096, 0, false});
          }
          picks = next;
          sink += kept;
        });
    bench::report(state, figures);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["bytes_per_block"] =
      static_cast<double>(map.memory_bytes()) / static_cast<double>(live);
  for (const std::uint64_t key : keys) map.erase(key);
  state.counters["bytes_after_free"] = static_cast<double>(map.memory_bytes());
}
BENCHMARK(BM_BlockMapChurn)
    ->ArgName("live")
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
