// The contract every peak source keeps, run against each of them (as RMM runs one suite against
// every memory resource): a counter sees what is allocated after it starts and nothing that
// peaked before; overlapping counters and resets each keep their own peak; readings never go
// back; and start, current and peak equal what the simulated device holds, as the source
// measures it:
//  - exact:    the process footprint, to the byte: NVML's figure for this process (context and
//              allocations), and every allocation made and freed between two readings;
//  - reported: what the allocator reported, to the byte: here every block the test allocates,
//              so the process's NVML figure less what it held before the first block;
//  - sampled:  the device used (NVML's total − free), to the byte for every level held until
//              the sampler thread has read it; a spike shorter than the sampling interval may
//              be missed (docs/peaks.md), so every spike here is held until it is seen.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "gpumem/allocate.hpp"
#include "gpumem/peak.hpp"
#include "peak/channels.hpp"
#include "sim/sim_driver.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem {
namespace {

using testing::mib;
using testing::MiB;

// One device whose contexts cost 300 MiB beside its 542 MiB reservation, so that the three
// quantities differ: footprint = context + blocks, device used = reservation + context + blocks,
// reported = blocks.
constexpr const char* kOneGpu = R"({
  "devices": [
    {"name": "NVIDIA H200", "uuid": "GPU-1b0a4a6e-0b8f-4c5e-9d6f-2a7c5f2d9e01",
     "pci_bus_id": "00000000:19:00.0", "total_mib": 143771, "reserved_mib": 542,
     "context_mib": 300}
  ]})";
constexpr int kDevice = 0;

// A block of device memory, as the test's allocator hands it out.
class Block {
 public:
  Block(std::size_t bytes, bool reports) : memory_(device_allocate(bytes, kDevice)) {
    reports_ = reports && memory_.valid();
    if (reports_) report_allocation(kDevice, bytes);
  }
  ~Block() { release(); }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  bool valid() const { return memory_.valid(); }
  void release() {
    if (!memory_.valid()) return;
    const std::size_t bytes = memory_.size();
    memory_.reset();
    if (reports_) report_deallocation(kDevice, bytes);
  }

 private:
  DeviceAllocation memory_;
  bool reports_ = false;
};

// What the simulated device holds, read from its own NVML (never through gpumem).
struct Device {
  testing::Driver driver;
  // NVML's total − free.
  std::int64_t used() const {
    abi::nvmlMemory_v2_t memory{};
    memory.version = abi::kNvmlMemory_v2;
    EXPECT_EQ(driver.nvml.get<abi::PFN_nvmlDeviceGetMemoryInfo_v2>("nvmlDeviceGetMemoryInfo_v2")(
                  driver.device(0), &memory),
              abi::NVML_SUCCESS);
    return static_cast<std::int64_t>(memory.total - memory.free);
  }
  // NVML's figure for this process.
  std::int64_t process() const { return static_cast<std::int64_t>(driver.process_used(0)); }
};

struct ExactSource {
  static constexpr Source source = Source::exact;
  static constexpr Quantity quantity = Quantity::process_footprint;
  static constexpr bool reports = false;
  static std::int64_t held(const Device& device, std::int64_t) { return device.process(); }
  static void settle(const Device&) {}  // events count as the driver calls return
};

struct ReportedSource {
  static constexpr Source source = Source::reported;
  static constexpr Quantity quantity = Quantity::reported;
  static constexpr bool reports = true;
  static std::int64_t held(const Device& device, std::int64_t before_blocks) {
    return device.process() - before_blocks;
  }
  static void settle(const Device&) {}  // a report counts when it is made
};

struct SampledSource {
  static constexpr Source source = Source::sampled;
  static constexpr Quantity quantity = Quantity::device_used;
  static constexpr bool reports = false;
  static std::int64_t held(const Device& device, std::int64_t) { return device.used(); }
  // Holds the level until the sampler thread itself has read it (its channel holds NVML's used,
  // the reservation apart): reads take a sample of their own, but a spike freed before the next
  // read is seen only by the thread.
  static void settle(const Device& device) {
    const peak::Channel* sampled = peak::channel(peak::Stream::sampled, kDevice);
    const std::int64_t want = static_cast<std::int64_t>(device.driver.nvml_used(0));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (sampled->level() != want) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the sampler never read the level";
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
};

template <class S>
class SourceConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    device_.driver.use(kDevice);  // the context exists before any counter starts
    before_blocks_ = device_.process();
    ASSERT_EQ(before_blocks_, mib(300));  // the simulated context
  }

  PeakCounter counter() {
    PeakCounter made(kDevice, S::source);
    EXPECT_EQ(made.source(), S::source) << exact_source_status();
    return made;
  }
  std::unique_ptr<Block> allocate(std::int64_t bytes) {
    auto block = std::make_unique<Block>(static_cast<std::size_t>(bytes), S::reports);
    EXPECT_TRUE(block->valid());
    S::settle(device_);
    return block;
  }
  void release(std::unique_ptr<Block>& block) {
    block.reset();
    S::settle(device_);
  }
  // A block allocated, held until the source has seen it, and freed.
  void spike(std::int64_t bytes) {
    auto block = allocate(bytes);
    release(block);
  }
  // What the device holds now, as this source measures it.
  std::int64_t held() const { return S::held(device_, before_blocks_); }
  // The reading, with the invariants every reading keeps.
  PeakReading read(const PeakCounter& counter) const {
    const PeakReading reading = counter.read();
    EXPECT_EQ(reading.device, kDevice);
    EXPECT_EQ(reading.source, S::source);
    EXPECT_EQ(reading.quantity, S::quantity);
    EXPECT_GE(reading.peak_bytes, reading.start_bytes);
    EXPECT_GE(reading.peak_bytes, reading.current_bytes);
    return reading;
  }

  testing::SimGpu gpu_{kOneGpu};
  Device device_;
  std::int64_t before_blocks_ = 0;
};

using Sources = ::testing::Types<ExactSource, ReportedSource, SampledSource>;
class SourceName {
 public:
  template <class S>
  static std::string GetName(int) {
    return std::string(to_string(S::source));
  }
};
TYPED_TEST_SUITE(SourceConformance, Sources, SourceName);

TYPED_TEST(SourceConformance, SeesAnAllocationMadeAfterItStarts) {
  const std::int64_t base = this->held();
  const PeakCounter counter = this->counter();
  EXPECT_EQ(this->read(counter).start_bytes, base);
  auto block = this->allocate(mib(8));
  const PeakReading reading = this->read(counter);
  EXPECT_EQ(reading.start_bytes, base);
  EXPECT_EQ(reading.current_bytes, base + mib(8));
  EXPECT_EQ(reading.peak_bytes, base + mib(8));
}

TYPED_TEST(SourceConformance, StartCurrentAndPeakEqualWhatTheDeviceHolds) {
  // Held before the counter (no source need see it happen): part of its start.
  auto earlier = std::make_unique<Block>(3 * MiB, TypeParam::reports);
  const std::int64_t at_start = this->held();
  const PeakCounter counter = this->counter();
  EXPECT_EQ(this->read(counter).start_bytes, at_start);
  EXPECT_EQ(this->read(counter).current_bytes, at_start);

  auto kept = this->allocate(mib(5));
  auto spike = this->allocate(mib(7));
  const std::int64_t at_peak = this->held();
  this->release(spike);
  const std::int64_t now = this->held();
  EXPECT_EQ(at_peak - at_start, mib(12));
  EXPECT_EQ(now - at_start, mib(5));

  const PeakReading reading = this->read(counter);
  EXPECT_EQ(reading.start_bytes, at_start);
  EXPECT_EQ(reading.current_bytes, now);
  EXPECT_EQ(reading.peak_bytes, at_peak);

  this->release(earlier);  // a block from before the start still leaves the level when freed
  EXPECT_EQ(this->read(counter).current_bytes, this->held());
  EXPECT_EQ(this->read(counter).current_bytes, at_start + mib(2));
}

TYPED_TEST(SourceConformance, APeakBeforeItStartsIsNotSeen) {
  const std::int64_t base = this->held();
  const PeakCounter earlier = this->counter();  // keeps the source running through the spike
  this->spike(mib(9));
  const PeakCounter later = this->counter();
  const PeakReading reading = this->read(later);
  EXPECT_EQ(reading.start_bytes, base);
  EXPECT_EQ(reading.current_bytes, base);
  EXPECT_EQ(reading.peak_bytes, base);
  EXPECT_EQ(this->read(earlier).peak_bytes, base + mib(9));  // the spike was there to be seen
}

TYPED_TEST(SourceConformance, NestedAndOverlappingCountersEachHaveTheirOwnPeak) {
  const std::int64_t base = this->held();
  const PeakCounter outer = this->counter();
  auto a = this->allocate(mib(4));
  auto inner = std::make_unique<PeakCounter>(this->counter());
  this->spike(mib(6));                       // 10 MiB above base, for outer and inner
  const PeakCounter late = this->counter();  // starts at 4 MiB, outlives inner
  const PeakReading in = this->read(*inner);
  EXPECT_EQ(in.start_bytes, base + mib(4));
  EXPECT_EQ(in.peak_bytes, base + mib(10));
  inner.reset();  // the middle one ends first
  this->release(a);
  this->spike(mib(2));

  const PeakReading out = this->read(outer);
  EXPECT_EQ(out.start_bytes, base);
  EXPECT_EQ(out.current_bytes, base);
  EXPECT_EQ(out.peak_bytes, base + mib(10));
  const PeakReading l = this->read(late);
  EXPECT_EQ(l.start_bytes, base + mib(4));
  EXPECT_EQ(l.current_bytes, base);
  EXPECT_EQ(l.peak_bytes, base + mib(4));
}

TYPED_TEST(SourceConformance, ResetStartsANewPeakForThatCounterOnly) {
  const std::int64_t base = this->held();
  PeakCounter counter = this->counter();
  const PeakCounter other = this->counter();
  auto kept = this->allocate(mib(1));
  this->spike(mib(6));
  EXPECT_EQ(this->read(counter).peak_bytes, base + mib(7));

  counter.reset();
  PeakReading reading = this->read(counter);
  EXPECT_EQ(reading.start_bytes, base + mib(1));
  EXPECT_EQ(reading.current_bytes, base + mib(1));
  EXPECT_EQ(reading.peak_bytes, base + mib(1));

  this->spike(mib(2));
  reading = this->read(counter);
  EXPECT_EQ(reading.start_bytes, base + mib(1));
  EXPECT_EQ(reading.peak_bytes, base + mib(3));
  EXPECT_EQ(this->read(other).start_bytes, base);
  EXPECT_EQ(this->read(other).peak_bytes, base + mib(7));
}

TYPED_TEST(SourceConformance, ReadsAreMonotone) {
  const std::int64_t base = this->held();
  const PeakCounter counter = this->counter();
  std::vector<std::unique_ptr<Block>> blocks;
  std::int64_t last_peak = this->read(counter).peak_bytes;
  std::int64_t highest = base;
  for (int step = 1; step <= 8; ++step) {
    if (step % 3 == 0) {
      this->release(blocks.front());  // the level falls; the peak must not
      blocks.erase(blocks.begin());
    } else {
      blocks.push_back(this->allocate(mib(step)));
    }
    highest = std::max(highest, this->held());
    const PeakReading reading = this->read(counter);
    EXPECT_EQ(reading.start_bytes, base) << "step " << step;
    EXPECT_EQ(reading.current_bytes, this->held()) << "step " << step;
    EXPECT_GE(reading.peak_bytes, last_peak) << "step " << step;
    EXPECT_EQ(reading.peak_bytes, highest) << "step " << step;
    last_peak = reading.peak_bytes;
  }
}

}  // namespace
}  // namespace gpumem
