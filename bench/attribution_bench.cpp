// Attribution's cost, each figure beside its baseline in the same run:
// - an allocation + free through the CUPTI callback path with attribution off (the baseline) and
//   on, called from a 32-frame native stack;
// - capturing that stack with the compiler's unwinder (_Unwind_Backtrace, what the library uses)
//   and with libunwind's unw_backtrace (the library's choice);
// - symbolizing 10,000 unique return addresses (libdw), cache cleared each time;
// - the memory of 1M live blocks, and of 1,000 peak snapshots of them;
// - random churn (a random live block freed, a new one allocated) through the recorder with an
//   attributing counter alive, at 1k … 1M live blocks, beside a random-access floor over the same
//   memory in paired rounds, and the table's memory per block and after the blocks are freed.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attribution/block_table.hpp"
#include "attribution/stacks.hpp"
#include "attribution/symbolize.hpp"
#include "callback_pair.hpp"
#include "churn_rounds.hpp"
#include "driver/abi/cupti.hpp"
#include "gpumem/memory.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/channels.hpp"
#include "peak/exact_callbacks.hpp"
#include "simulated_gpu.hpp"

namespace {

using namespace gpumem;

constexpr int kStackFrames = 32;
// What a live block must keep: its address, its size and its stack id.
constexpr double kFloorBytesPerBlock = 8 + 8 + 4;

void per_event(benchmark::State& state, std::int64_t events) {
  state.counters["per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Calls fn at `depth` frames below the caller, so that a capture sees a known stack.
template <class Fn>
[[gnu::noinline]] void at_depth(int depth, Fn& fn) {
  if (depth <= 1) {
    fn();
  } else {
    at_depth(depth - 1, fn);
  }
  benchmark::ClobberMemory();  // not a tail call: every level keeps its frame
}

// How many frames below the benchmark body's caller are already there (the runner's).
int runner_frames() {
  std::uintptr_t frames[attribution::kMaxNativeFrames];
  return static_cast<int>(attribution::capture_native(frames, attribution::kMaxNativeFrames));
}

// attribution: 0 off (the baseline: today's path), 1 on; counters: how many counters (each
// attributing when attribution is on) are alive.
void BM_AllocationEvent(benchmark::State& state) {
  const bool attributing = state.range(0) != 0;
  const auto counters = static_cast<std::size_t>(state.range(1));
  peak::Channel* channel = peak::channel(peak::Stream::exact, 0);
  std::vector<peak::CounterSlot> slots(counters);
  std::vector<peak::attribution::Slot> attribution_slots(counters);
  for (std::size_t i = 0; i < counters; ++i) {
    if (attributing) {
      peak::attribution::attach(*channel, slots[i], attribution_slots[i]);
    } else {
      channel->attach(slots[i]);
    }
  }
  bench::CallbackPair pair(1ull << 40);
  const int depth = std::max(1, kStackFrames - runner_frames());
  auto body = [&] {
    for (auto _ : state) pair();
  };
  at_depth(depth, body);
  per_event(state, state.iterations() * 2);
  state.counters["frames"] = kStackFrames;
  for (std::size_t i = 0; i < counters; ++i) {
    if (attributing) {
      peak::attribution::detach(*channel, slots[i], attribution_slots[i]);
    } else {
      channel->detach(slots[i]);
    }
  }
}
BENCHMARK(BM_AllocationEvent)
    ->ArgNames({"attribution", "counters"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({1, 64});

// unwinder: 0 the compiler's _Unwind_Backtrace, 1 libunwind's unw_backtrace (the library's).
void BM_CaptureStack(benchmark::State& state) {
  attribution::prepare_unwinder();
  const int depth = std::max(1, kStackFrames - runner_frames());
  std::uintptr_t frames[attribution::kMaxNativeFrames];
  std::size_t captured = 0;
  auto body = [&] {
    for (auto _ : state) {
      captured = state.range(0) == 0
                     ? attribution::capture_native_compiler(frames, attribution::kMaxNativeFrames)
                     : attribution::capture_native(frames, attribution::kMaxNativeFrames);
      benchmark::DoNotOptimize(frames);
    }
  };
  at_depth(depth, body);
  state.counters["frames"] = static_cast<double>(captured);
  state.SetLabel(state.range(0) == 0 ? "_Unwind_Backtrace" : "unw_backtrace");
}
BENCHMARK(BM_CaptureStack)->ArgName("unwinder")->Arg(0)->Arg(1);

// Capture + interning of a stack already seen (what an allocation pays beyond the event).
void BM_CaptureAndIntern(benchmark::State& state) {
  const int depth = std::max(1, kStackFrames - runner_frames());
  auto body = [&] {
    for (auto _ : state) benchmark::DoNotOptimize(attribution::capture_stack());
  };
  at_depth(depth, body);
}
BENCHMARK(BM_CaptureAndIntern);

// 10,000 unique return addresses in this program's code (every 16th byte from a function of
// the library), symbolized with a cleared cache each iteration.
void BM_Symbolize10000Frames(benchmark::State& state) {
  std::vector<std::uintptr_t> addresses;
  const auto base = reinterpret_cast<std::uintptr_t>(&gpumem::gpu_mem_get_bytes);
  for (std::uintptr_t i = 0; i < 10000; ++i) addresses.push_back(base + 16 * i + 1);
  attribution::symbolize(addresses);  // the first loads the DWARF of the program
  std::size_t named = 0;
  for (auto _ : state) {
    attribution::forget_symbols();
    const auto frames = attribution::symbolize(addresses);
    named = 0;
    for (const auto& frame : frames) named += frame.function ? 1 : 0;
  }
  state.counters["named"] = static_cast<double>(named);
  state.SetLabel("per 10,000 unique frames");
}
BENCHMARK(BM_Symbolize10000Frames)->Unit(benchmark::kMillisecond);

// 1M live blocks, then 1,000 new peaks each kept as a snapshot while the table moves on (each
// new peak one more block); then every block freed while the snapshots are held, and released.
void BM_SnapshotMemory1MBlocks(benchmark::State& state) {
  constexpr std::uint64_t kBlocks = 1'000'000;
  constexpr int kSnapshots = 1000;
  for (auto _ : state) {
    attribution::BlockTable table;
    std::int64_t clock = 0;  // each block allocated after the last (a clock that moves)
    // The longest insert: the one that grows the table, copying it (under the device's mutex
    // in the recorder).
    double longest_insert = 0;
    for (std::uint64_t i = 1; i <= kBlocks; ++i) {
      const double start = bench::thread_cpu_ns();
      table.insert(i << 21, {4096, ++clock, 1, 0});
      longest_insert = std::max(longest_insert, bench::thread_cpu_ns() - start);
    }
    state.counters["longest_insert_ms"] = longest_insert / 1e6;
    const std::size_t live = table.memory_bytes();
    std::vector<attribution::Snapshot> snapshots;
    for (int i = 0; i < kSnapshots; ++i) {
      snapshots.push_back(table.share());
      table.insert((kBlocks + 1 + static_cast<std::uint64_t>(i)) << 21, {4096, ++clock, 1, 0});
    }
    const std::size_t with_snapshots = table.memory_bytes();
    state.counters["MiB_1M_blocks"] = static_cast<double>(live) / (1 << 20);
    state.counters["bytes_per_block"] = static_cast<double>(live) / kBlocks;
    state.counters["floor_bytes_per_block"] = kFloorBytesPerBlock;
    state.counters["ratio_to_floor"] = static_cast<double>(live) / kBlocks / kFloorBytesPerBlock;
    state.counters["bytes_per_snapshot"] = static_cast<double>(with_snapshots - live) / kSnapshots;
    state.counters["full_copy_bytes"] = static_cast<double>(live);  // the baseline
    // A peak snapshot's read held the device's mutex for the whole walk: into a list that grew
    // as it went (what it was first), and into one sized and touched beforehand (what it was
    // next); now for one step of the walk at a time (peak_of).
    {
      std::vector<attribution::BlockTable::Entry> grown;
      double start = bench::thread_cpu_ns();
      table.collect(snapshots.front(), grown);
      state.counters["walk_ms_growing_list"] = (bench::thread_cpu_ns() - start) / 1e6;
      std::vector<attribution::BlockTable::Entry> sized(table.size() + table.size() / 16 + 16);
      sized.clear();
      start = bench::thread_cpu_ns();
      table.collect(snapshots.front(), sized);
      state.counters["walk_ms_sized_list"] = (bench::thread_cpu_ns() - start) / 1e6;
      state.counters["walk_blocks"] = static_cast<double>(sized.size());
      // What peak_of holds it for now: the longest of the steps of a walk (kWalkStep slots or
      // retired blocks each), the table churned between them as the device would.
      std::vector<attribution::BlockTable::Entry> stepped(sized.size() + sized.size() / 16 + 16);
      stepped.clear();
      table.begin_walk(snapshots.front());
      double longest = 0;
      std::size_t steps = 0;
      std::uint64_t churned = kBlocks + kSnapshots + 1;
      for (bool done = false; !done; ++steps) {
        start = bench::thread_cpu_ns();
        done = table.walk_step(stepped, peak::attribution::kWalkStep);
        longest = std::max(longest, bench::thread_cpu_ns() - start);
        table.insert(churned << 21, {4096, ++clock, 1, 0});
        table.erase(churned++ << 21);
      }
      table.end_walk();
      state.counters["walk_longest_step_us"] = longest / 1e3;
      state.counters["walk_steps"] = static_cast<double>(steps);
    }
    for (std::uint64_t i = 1; i <= kBlocks + kSnapshots; ++i) table.erase(i << 21);
    state.counters["MiB_freed_while_held"] = static_cast<double>(table.memory_bytes()) / (1 << 20);
    for (attribution::Snapshot snapshot : snapshots) table.release(snapshot);
    state.counters["bytes_after_release"] = static_cast<double>(table.memory_bytes());
  }
}
BENCHMARK(BM_SnapshotMemory1MBlocks)->Iterations(1)->Unit(benchmark::kMillisecond);

// The table alone under the same churn, with a snapshot held from the start (a peak's): every
// freed block is retired for it, so the retired list and its pruning are in the figure. Memory
// per live block, with the snapshot held and after it is released.
void BM_BlockTableChurn(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  attribution::BlockTable table;
  bench::AddressStream addresses;
  std::vector<std::uint64_t> keys(live);
  std::int64_t clock = 0;  // each block allocated after the last (a clock that moves)
  for (std::uint64_t& key : keys) {
    key = addresses.next();
    table.insert(key, {4096, ++clock, 1, 0});
  }
  bench::IndexPicker picks(live);
  bench::ChurnFloor floor(table.memory_bytes(), keys, picks);
  const std::int64_t events = std::max<std::int64_t>(100'000, static_cast<std::int64_t>(live));
  std::uint64_t sink = 0;
  const attribution::Snapshot peak = table.share();
  for (auto _ : state) {
    const bench::RoundFigures figures = bench::paired_rounds(
        9, events, [&](std::int64_t count) { sink += floor(count); },
        [&](std::int64_t count) {
          for (std::int64_t i = 0; i < count; i += 2) {
            std::uint64_t& key = keys[picks.next()];
            sink += table.erase(key) ? 1 : 0;
            key = addresses.next();
            table.insert(key, {4096, ++clock, 1, 0});
          }
        });
    bench::report(state, figures);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["bytes_per_block_held"] =
      static_cast<double>(table.memory_bytes()) / static_cast<double>(live);
  table.release(peak);
  state.counters["bytes_per_block"] =
      static_cast<double>(table.memory_bytes()) / static_cast<double>(live);
  state.counters["ratio_to_floor"] =
      static_cast<double>(table.memory_bytes()) / static_cast<double>(live) / kFloorBytesPerBlock;
  state.counters["beside"] = static_cast<double>(table.beside());
  for (const std::uint64_t key : keys) table.erase(key);
  state.counters["bytes_after_free"] = static_cast<double>(table.memory_bytes());
}
BENCHMARK(BM_BlockTableChurn)
    ->ArgName("live")
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Random churn through the recorder (peak::attribution::record, what each allocation and free
// pays under its device's mutex in attribution mode) with one attributing counter alive: each
// round frees random live blocks and allocates new ones at random addresses, so the level stays
// and the counter's peak snapshot stays held while blocks it sees are freed.
void BM_AttributionChurn(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  peak::Channel* channel = peak::channel(peak::Stream::exact, 0);
  peak::CounterSlot counter;
  peak::attribution::Slot slot;
  peak::attribution::attach(*channel, counter, slot);
  bench::AddressStream addresses;
  std::vector<std::uint64_t> keys(live);
  peak::attribution::BlockEvent event;
  event.bytes = 4096;
  event.stack = 1;
  event.allocation = true;
  for (std::uint64_t& key : keys) {
    key = addresses.next();
    event.key = key;
    peak::attribution::record(*channel, 0, 4096, &event);
  }
  // The table's slots are 24 bytes at 7/16 to 13/16 full (5/8 after growing): the floor covers
  // as much memory.
  bench::IndexPicker picks(live);
  bench::ChurnFloor floor(live * 24 * 8 / 5, keys, picks);
  const std::int64_t events = std::max<std::int64_t>(100'000, static_cast<std::int64_t>(live));
  std::uint64_t sink = 0;
  for (auto _ : state) {
    const bench::RoundFigures figures = bench::paired_rounds(
        9, events, [&](std::int64_t count) { sink += floor(count); },
        [&](std::int64_t count) {
          peak::attribution::BlockEvent churn = event;
          for (std::int64_t i = 0; i < count; i += 2) {
            std::uint64_t& key = keys[picks.next()];
            churn.key = key;
            churn.allocation = false;
            peak::attribution::record(*channel, 0, -4096, &churn);
            key = addresses.next();
            churn.key = key;
            churn.allocation = true;
            peak::attribution::record(*channel, 0, 4096, &churn);
          }
        });
    bench::report(state, figures);
  }
  benchmark::DoNotOptimize(sink);
  const std::size_t blocks = peak::attribution::live(*channel, 0).blocks.size();
  state.counters["live_blocks"] = static_cast<double>(blocks);
  // The counter's peak snapshot read whole (peak_of: sized, walked in steps, one block per key
  // kept), the blocks its peak saw still held as retired.
  const double read_start = bench::thread_cpu_ns();
  const std::size_t peak_blocks = peak::attribution::peak_of(slot).blocks.size();
  state.counters["peak_read_ms"] = (bench::thread_cpu_ns() - read_start) / 1e6;
  state.counters["peak_blocks"] = static_cast<double>(peak_blocks);
  for (const std::uint64_t key : keys) {
    event.key = key;
    event.allocation = false;
    peak::attribution::record(*channel, 0, -4096, &event);
  }
  peak::attribution::detach(*channel, counter, slot);
}
BENCHMARK(BM_AttributionChurn)
    ->ArgName("live")
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  const std::string state = gpumem::bench::use_simulated_gpu("attribution");
  gpumem::preload();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::remove(state.c_str());
  return 0;
}
