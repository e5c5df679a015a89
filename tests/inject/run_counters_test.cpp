// The counters file on its own: shared between processes to the byte, a peak that never falls,
// what a dead process held given back, attachments recorded, and foreign files refused.
#include "gpumem/internal/run_counters.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <thread>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gpumem::run {
namespace {

namespace fs = std::filesystem;

class Counters : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("gpumem-counters-test-" + std::to_string(::getpid())))
                .string();
    fs::remove(path_);
  }
  void TearDown() override {
    unmap_run_counters(counters_);
    fs::remove(path_);
  }
  RunCounters& create() {
    std::string error;
    counters_ = map_run_counters(path_, /*create=*/true, &error);
    if (counters_ == nullptr) ADD_FAILURE() << error;
    return *counters_;
  }

  std::string path_;
  RunCounters* counters_ = nullptr;
};

TEST_F(Counters, ACreatedFileStartsEmptyAndNamesItsMonitor) {
  RunCounters& counters = create();
  EXPECT_EQ(counters.magic, kCountersMagic);
  EXPECT_EQ(counters.version, kCountersVersion);
  EXPECT_EQ(counters.monitor_pid, static_cast<std::int32_t>(::getpid()));
  EXPECT_EQ(counters.devices[0].current.load(), 0);
  EXPECT_EQ(counters.devices[kMaxDevices - 1].peak.load(), 0);
  EXPECT_EQ(counters.processes_attached.load(), 0);
}

TEST_F(Counters, ThePeakRisesWithTheLevelAndNeverFalls) {
  RunCounters& counters = create();
  DeviceCounters& device = counters.devices[1];
  add_event(counters, 1, 8 << 20);
  const std::int64_t first_peak_time = device.peak_time_ns.load();
  EXPECT_GT(first_peak_time, 0);
  add_event(counters, 1, 4 << 20);
  add_event(counters, 1, -(10 << 20));
  EXPECT_EQ(device.current.load(), 2 << 20);
  EXPECT_EQ(device.peak.load(), 12 << 20);
  const std::int64_t peak_time = device.peak_time_ns.load();
  EXPECT_GE(peak_time, first_peak_time);
  add_event(counters, 1, 1 << 20);  // below the peak: neither the peak nor its time moves
  EXPECT_EQ(device.peak.load(), 12 << 20);
  EXPECT_EQ(device.peak_time_ns.load(), peak_time);
  EXPECT_EQ(counters_->devices[0].current.load(), 0);  // another device's line is untouched
}

// Two threads' calls interleaved as the driver may run them: A's allocation of 8 MiB enters (the
// device may charge it from now on), B's free of a 4 MiB block enters (it may be released from
// now on), A's allocation returns, B's free returns. The device held at least A's block (8 MiB)
// and at most both (12 MiB), as the driver ordered the charge and the release: the level's peak
// and the bracketed peak are the two ends.
TEST_F(Counters, AnAllocationAndAFreeInFlightTogetherBracketTheDevicesPeak) {
  RunCounters& counters = create();
  DeviceCounters& device = counters.devices[2];
  constexpr std::int64_t kMiB = 1 << 20;
  add_event(counters, 2, 4 * kMiB);  // B's block, from before
  using detail::kBracketNoPeak;
  const std::int64_t a_entered = add_bracketed_event(counters, 2, 0, {8 * kMiB, kBracketNoPeak});
  EXPECT_EQ(a_entered, 12 * kMiB);
  add_bracketed_event(counters, 2, -4 * kMiB, {0, kBracketNoPeak});  // B's ENTER: the level
  add_bracketed_event(counters, 2, 8 * kMiB, {0, a_entered});        // A's EXIT: both peaks
  add_bracketed_event(counters, 2, 0, {-4 * kMiB, kBracketNoPeak});  // B's EXIT: bracketed
  EXPECT_EQ(device.current.load(), 8 * kMiB);
  EXPECT_EQ(device.bracket.load(), 8 * kMiB);
  EXPECT_EQ(device.peak.load(), 8 * kMiB);
  EXPECT_EQ(device.bracket_peak.load(), 12 * kMiB);
}

// One call at a time (one thread): the two peaks agree, and a request that failed raises neither.
TEST_F(Counters, CallsOneAtATimeGiveOnePeakAndAFailedRequestRaisesNone) {
  RunCounters& counters = create();
  DeviceCounters& device = counters.devices[0];
  constexpr std::int64_t kMiB = 1 << 20;
  using detail::kBracketNoPeak;
  std::int64_t entered = add_bracketed_event(counters, 0, 0, {3 * kMiB, kBracketNoPeak});
  add_bracketed_event(counters, 0, 3 * kMiB, {0, entered});
  add_bracketed_event(counters, 0, 0, {64 * kMiB, kBracketNoPeak});   // out of memory:
  add_bracketed_event(counters, 0, 0, {-64 * kMiB, kBracketNoPeak});  // taken back at its EXIT
  entered = add_bracketed_event(counters, 0, 0, {2 * kMiB, kBracketNoPeak});
  add_bracketed_event(counters, 0, 2 * kMiB, {0, entered});
  add_bracketed_event(counters, 0, -3 * kMiB, {0, kBracketNoPeak});
  add_bracketed_event(counters, 0, 0, {-3 * kMiB, kBracketNoPeak});
  add_event(counters, 0, kMiB);  // a pool grew: both levels at once
  EXPECT_EQ(device.current.load(), 3 * kMiB);
  EXPECT_EQ(device.bracket.load(), 3 * kMiB);
  EXPECT_EQ(device.peak.load(), 5 * kMiB);
  EXPECT_EQ(device.bracket_peak.load(), 5 * kMiB);
}

TEST_F(Counters, ProcessesSharingTheFileAddUpToTheByte) {
  RunCounters& counters = create();
  constexpr int kChildren = 3;
  for (int child = 0; child < kChildren; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      RunCounters* mine = map_run_counters(path_, /*create=*/false, nullptr);
      if (mine == nullptr) ::_exit(1);
      mine->processes_attached.fetch_add(1);
      for (int i = 0; i < 1000; ++i) add_event(*mine, 0, 3);
      for (int i = 0; i < 1000; ++i) add_event(*mine, 0, -1);
      ::_exit(0);
    }
  }
  for (int child = 0; child < kChildren; ++child) {
    int status = 0;
    ASSERT_GT(::wait(&status), 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(counters.processes_attached.load(), kChildren);
  EXPECT_EQ(counters.devices[0].current.load(), kChildren * 2000);
  EXPECT_GE(counters.devices[0].peak.load(), 3000);
  EXPECT_LE(counters.devices[0].peak.load(), kChildren * 3000);
}

// What a process's placed ledger holds on ordinal `ordinal`, counted in device slot `device` (-1:
// none), as the injection library moves it: the device's level first (the mirror), then the word.
void hold(RunCounters& counters, ProcessSlot& slot, int ordinal, int device, std::int64_t bytes) {
  if (slot.ordinal_device[ordinal].load() == 0) {
    detail::take_ledger_level(slot.ledger[ordinal]);  // an empty word, as a placement leaves it
    slot.ordinal_device[ordinal].store(device >= 0 ? device + 1 : -1);
  }
  if (device >= 0) add_event(counters, device, bytes);
  slot.ledger[ordinal].fetch_add(static_cast<std::uint64_t>(bytes));
}

TEST_F(Counters, WhatADeadProcessHeldIsGivenBack) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[0];
  slot.pid.store(4242);
  hold(counters, slot, 0, 0, 5 << 20);
  hold(counters, slot, 1, 2, 1 << 20);
  hold(counters, slot, 3, 0, 3 << 20);  // a second ordinal on device slot 0 (a MIG alias)
  hold(counters, slot, 3, 0, -1 << 20);
  hold(counters, slot, 2, -1, 9 << 20);  // an ordinal with no device slot: in no level
  add_event(counters, 0, 2 << 20);       // another process's
  EXPECT_EQ(ledger_bytes(slot, 0), 7 << 20);
  EXPECT_EQ(ledger_bytes(slot, 2), 1 << 20);
  EXPECT_EQ(counters.devices[0].current.load(), 9 << 20);
  give_back(counters, slot);
  EXPECT_EQ(counters.devices[0].current.load(), 2 << 20);
  EXPECT_EQ(counters.devices[2].current.load(), 0);
  EXPECT_EQ(counters.devices[0].peak.load(), 9 << 20);  // the peak stays what it was
  EXPECT_EQ(ledger_bytes(slot, 0), 0);
  EXPECT_EQ(detail::ledger_level(slot.ledger[2].load()), 0);
  give_back(counters, slot);  // twice gives back nothing more
  EXPECT_EQ(counters.devices[0].current.load(), 2 << 20);
}

// A slot's `calls`: two equal readings with no call in flight, and only then, say that no call
// overlapped the time between them (docs/peaks.md).
TEST_F(Counters, ACallBetweenTwoReadingsOfCallsIsSeen) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[0];
  const std::uint64_t idle = slot.calls.load();
  EXPECT_TRUE(quiet_calls(idle));
  slot.calls.fetch_add(kCallEntered);  // an allocation enters, the driver charges it
  const std::uint64_t entered = slot.calls.load();
  EXPECT_FALSE(quiet_calls(entered));
  slot.calls.fetch_add(kCallEntered);  // a free on another thread
  slot.calls.fetch_add(kCallLeft);
  EXPECT_FALSE(quiet_calls(slot.calls.load()));
  slot.calls.fetch_add(kCallLeft);  // both left: quiet again, but not the same word
  const std::uint64_t left = slot.calls.load();
  EXPECT_TRUE(quiet_calls(left));
  EXPECT_NE(left, idle);
  EXPECT_EQ(left >> 16, (idle >> 16) + 2);  // two calls left
  // A claimed slot: nothing in flight (whatever its last owner left), a generation of its own.
  slot.calls.fetch_add(kCallEntered);
  reset_calls(slot);
  EXPECT_TRUE(quiet_calls(slot.calls.load()));
  EXPECT_NE(slot.calls.load(), left);
}

// The same on the threads' own lines: read_calls() sums them with the shared word, so that a
// call marked on any line is seen as one marked on `calls` would be.
TEST_F(Counters, ACallOnAThreadsOwnLineIsSeenBetweenTwoReadings) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[0];
  const std::uint64_t idle = read_calls(slot);
  EXPECT_TRUE(quiet_calls(idle));
  CallLine* const line = take_call_line(slot);
  ASSERT_EQ(line, &slot.call_lines[0]);
  EXPECT_EQ(slot.call_lines_used.load(), 1);
  EXPECT_EQ(read_calls(slot), idle);  // a line taken is no call
  enter_call(*line);
  const std::uint64_t entered = read_calls(slot);
  EXPECT_FALSE(quiet_calls(entered));
  EXPECT_EQ(entered, idle + 1);
  slot.calls.fetch_add(kCallEntered);  // a thread beyond the lines, on the shared word
  EXPECT_EQ(read_calls(slot) & kCallsInFlightMask, 2u);
  slot.calls.fetch_add(kCallLeft);
  leave_call(*line);
  const std::uint64_t left = read_calls(slot);
  EXPECT_TRUE(quiet_calls(left));
  EXPECT_EQ(left >> 16, (idle >> 16) + 2);  // two calls left, one on each
  leave_call(*line);                        // an EXIT whose ENTER was not marked leaves nothing
  EXPECT_EQ(read_calls(slot), left);
}

// Each thread takes its own line, so calls on several threads are each seen, in flight and after
// they left; threads beyond the lines get none (they mark the shared word).
TEST_F(Counters, EachThreadMarksItsCallsOnItsOwnLine) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[0];
  const std::uint64_t idle = read_calls(slot);
  std::vector<std::thread> threads;
  std::atomic<int> entered{0};
  std::atomic<bool> leave{false};
  for (int thread = 0; thread < kCallLines; ++thread) {
    threads.emplace_back([&] {
      CallLine* const line = take_call_line(slot);
      if (line == nullptr) return;
      enter_call(*line);
      entered.fetch_add(1);
      while (!leave.load()) std::this_thread::yield();
      leave_call(*line);
    });
  }
  while (entered.load() < kCallLines) std::this_thread::yield();
  EXPECT_EQ(read_calls(slot) & kCallsInFlightMask, static_cast<std::uint64_t>(kCallLines));
  EXPECT_EQ(take_call_line(slot), nullptr);  // every line is taken
  leave.store(true);
  for (std::thread& thread : threads) thread.join();
  const std::uint64_t left = read_calls(slot);
  EXPECT_TRUE(quiet_calls(left));
  EXPECT_EQ(left >> 16, (idle >> 16) + kCallLines);
  for (const CallLine& line : slot.call_lines) EXPECT_EQ(line.word.load(), kCallLeft + 1);
}

// A new owner of the slot: its lines free and quiet, the value another than any its last owner
// could have left, and a line taken again changes nothing.
TEST_F(Counters, AClaimedSlotStartsWithItsLinesFreeAndQuiet) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[0];
  CallLine* const first = take_call_line(slot);
  CallLine* const second = take_call_line(slot);
  enter_call(*first);
  leave_call(*first);
  enter_call(*second);  // its owner died in a call
  const std::uint64_t before = read_calls(slot);
  reset_calls(slot);
  const std::uint64_t after = read_calls(slot);
  EXPECT_TRUE(quiet_calls(after));
  EXPECT_NE(after, before);
  EXPECT_EQ(slot.call_lines_used.load(), 0);
  EXPECT_EQ(take_call_line(slot), first);
  EXPECT_EQ(read_calls(slot), after);  // a line taken is no call
  EXPECT_EQ(first->word.load(), 0u);
}

// The line count is the file's: a forged one reads the lines there are.
TEST_F(Counters, AForgedLineCountReadsOnlyTheLinesThereAre) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[0];
  for (CallLine& line : slot.call_lines) line.word.store(std::uint64_t{1} << 16);
  slot.call_lines_used.store(1 << 30);
  EXPECT_EQ(read_calls(slot), static_cast<std::uint64_t>(kCallLines) << 16);
  EXPECT_EQ(take_call_line(slot), nullptr);
  slot.call_lines_used.store(-5);
  EXPECT_EQ(read_calls(slot), 0u);
  EXPECT_EQ(take_call_line(slot), nullptr);
}

TEST_F(Counters, AttachmentsAreRecordedWithTheirReason) {
  RunCounters& counters = create();
  record_attach(counters, 100, 7, kAttachedExact, "");
  record_attach(counters, 101, 7, kAttachedFallback, "CUPTI is held by another tool");
  EXPECT_EQ(counters.record_count.load(), 2);
  EXPECT_EQ(counters.records[0].pid.load(), 100);
  EXPECT_EQ(counters.records[0].pid_namespace.load(), 7u);
  EXPECT_EQ(counters.records[0].state.load(), kAttachedExact);
  EXPECT_EQ(counters.records[1].state.load(), kAttachedFallback);
  EXPECT_STREQ(counters.records[1].reason, "CUPTI is held by another tool");
  // A long reason (a CUPTI error's name alone is 50 characters) is kept whole: the summary
  // wraps it rather than cutting it.
  const std::string long_reason(300, 'y');
  record_attach(counters, 102, 7, kAttachedFallback, long_reason);
  EXPECT_EQ(std::string(counters.records[2].reason), long_reason);
  record_attach(counters, 103, 7, kAttachedFallback,
                std::string(5000, 'x'));  // beyond any reason gpumem writes: cut, terminated
  EXPECT_EQ(std::string(counters.records[3].reason).size(), sizeof counters.records[3].reason - 1);
  EXPECT_EQ(sizeof counters.records[3].reason, 1024u);
}

TEST_F(Counters, AForeignOrMissingFileIsRefusedWithAReason) {
  std::string error;
  EXPECT_EQ(map_run_counters(path_, /*create=*/false, &error), nullptr);
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  std::ofstream(path_) << "not a counters file";
  EXPECT_EQ(map_run_counters(path_, /*create=*/false, &error), nullptr);
  EXPECT_NE(error.find("not a counters file"), std::string::npos) << error;
  fs::resize_file(path_, sizeof(RunCounters));  // the right size, but no magic
  EXPECT_EQ(map_run_counters(path_, /*create=*/false, &error), nullptr);
  EXPECT_NE(error.find("not a counters file"), std::string::npos) << error;
}

// The monitor's counters live in a sealed memory file: no process of the command can shrink or
// grow it under the others' mappings (each touch of a page beyond a shrunk end is a SIGBUS), and
// a process reaches it through the monitor's /proc entry.
TEST(SealedCounters, NoProcessCanShrinkOrGrowThem) {
  std::string path, error;
  int fd = -1;
  RunCounters* counters = create_run_counters(&path, &fd, &error);
  ASSERT_NE(counters, nullptr) << error;
  EXPECT_EQ(path, "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd));
  add_event(*counters, 0, 5 << 20);
  EXPECT_NE(::truncate(path.c_str(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::truncate(path.c_str(), 2 * sizeof(RunCounters)), 0);
  RunCounters* joined = map_run_counters(path, /*create=*/false, &error);
  ASSERT_NE(joined, nullptr) << error;
  EXPECT_EQ(joined->devices[0].current.load(), 5 << 20);  // the same file, not a copy
  unmap_run_counters(joined);
  unmap_run_counters(counters);
  ::close(fd);
}

// A device slot left "being named" (its namer killed at that instant, or a process writing there)
// is passed over: the device is named in the next slot, and the claim returns.
TEST_F(Counters, ADeviceSlotStuckBeingNamedIsPassedOver) {
  RunCounters& counters = create();
  counters.devices[0].state.store(kDeviceNaming);
  const Uuid uuid = *parse_uuid("GPU-00000000-0000-4000-8000-000000000001");
  EXPECT_EQ(find_or_claim_device(counters, uuid), 1);
  EXPECT_EQ(find_or_claim_device(counters, uuid), 1);
}

// A process asks for a reading and waits; the monitor, woken by the doorbell, answers it.
TEST_F(Counters, AReadingAskedIsAnsweredThroughTheDoorbell) {
  RunCounters& counters = create();
  ProcessSlot& slot = counters.processes[3];
  const std::uint32_t rung = counters.doorbell.load();
  std::thread monitor([&] {
    wait_for_doorbell(counters, rung, 60'000'000'000);
    ASSERT_EQ(slot.asked.load(), 1u);
    EXPECT_EQ(slot.asked_kind.load(), kAskedAtContext);
    answer_reading(slot, slot.asked.load(), kAnswerRead);
  });
  EXPECT_EQ(ask_for_reading(counters, slot, kAskedAtContext, 60'000'000'000), kAnswerRead);
  monitor.join();
  EXPECT_EQ(slot.answered.load(), 1u);
}

// Nobody answers (no monitor): the process waits its bounded time once, and is told so.
TEST_F(Counters, AReadingNobodyAnswersIsGivenUp) {
  RunCounters& counters = create();
  EXPECT_EQ(ask_for_reading(counters, counters.processes[0], kAskedAtExit, 1'000'000), 0u);
}

}  // namespace
}  // namespace gpumem::run
