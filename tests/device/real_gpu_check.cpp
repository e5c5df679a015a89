// Checks gpumem against a real NVIDIA driver: identity, queries and exact peaks. Prints one
// "PASS name: detail" / "FAIL name: detail" line per check and exits non-zero on any failure.
// Run by tests/device/run.sh, which also compares against nvidia-smi.
#include <gpumem/gpumem.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
  if (!ok) ++failures;
}

constexpr std::int64_t MiB = std::int64_t{1} << 20;

}  // namespace

int main() {
  const auto all = gpumem::devices();
  check(!all.empty(), "devices", std::to_string(all.size()) + " visible");
  for (const auto& why : gpumem::diagnostics()) std::printf("diagnostic: %s\n", why.c_str());
  if (all.empty()) return 1;
  for (const auto& device : all) {
    std::printf("device %d: nvml %u %s %s %s total=%llu used=%llu free=%llu reserved=%llu\n",
                device.ordinal, device.nvml_index, device.name.c_str(), device.uuid.c_str(),
                device.pci_bus_id.c_str(), static_cast<unsigned long long>(device.memory.total),
                static_cast<unsigned long long>(device.memory.used),
                static_cast<unsigned long long>(device.memory.free),
                static_cast<unsigned long long>(device.memory.reserved));
    const auto mb = gpumem::gpu_mem_get(device.ordinal);
    check(mb.total == gpumem::b2mb(static_cast<std::int64_t>(device.memory.total)),
          "gpu_mem_get(" + std::to_string(device.ordinal) + ")", std::to_string(mb.total) + " MB");
  }
  check(gpumem::gpu_mem_get(static_cast<int>(all.size())) == gpumem::GPUMemory{}, "invalid id",
        "zeros");

  // Exact peaks: 256 MiB kept, a 128 MiB blip, 1-byte allocation.
  check(gpumem::preload(), "preload", "primary context created");
  gpumem::GPUMemTrace trace{gpumem::TraceOptions{.silent = true}};
  const auto source = std::string(gpumem::to_string(trace.source()));
  {
    auto kept = gpumem::device_allocate(256 * MiB);
    { auto blip = gpumem::device_allocate(128 * MiB); }
    trace.stop();
    const auto bytes = trace.data_bytes();
    std::printf("trace (%s): start=%lld end=%lld peak=%lld\n", source.c_str(),
                static_cast<long long>(bytes.start), static_cast<long long>(bytes.end),
                static_cast<long long>(bytes.peak));
    const auto [used, peaked] = trace.data();
    if (trace.source() == gpumem::Source::exact) {
      check(bytes.delta_used == 256 * MiB && bytes.delta_peaked == 128 * MiB, "exact trace",
            std::to_string(used) + " / " + std::to_string(peaked) + " MB");
    } else {
      check(used >= 254 && used <= 258, "sampled trace delta used", std::to_string(used) + " MB");
      std::printf("exact source unavailable: %s\n", gpumem::exact_source_status().c_str());
    }
  }
  {
    gpumem::PeakCounter counter;
    { auto one = gpumem::device_allocate(1); }
    const auto reading = counter.read();
    std::printf("1-byte blip (%s): peak-start=%lld\n",
                std::string(gpumem::to_string(reading.source)).c_str(),
                static_cast<long long>(reading.peak_bytes - reading.start_bytes));
    if (reading.source == gpumem::Source::exact) {
      check(reading.peak_bytes - reading.start_bytes == 1, "exact 1-byte blip", "seen");
    }
  }
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
