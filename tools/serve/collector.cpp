#include "collector.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "gpumem/device.hpp"
#include "publish/spool_files.hpp"

namespace gpumem::serve {
namespace {

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string process_name(unsigned pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

bool process_alive(unsigned pid) {
  return pid != 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

void remove_abandoned_temporaries(const std::filesystem::path& spool) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(spool, error)) {
    const auto writer = detail::spool_temporary_writer(entry.path().filename().string());
    if (writer && !process_alive(*writer)) std::filesystem::remove(entry.path(), error);
  }
}

Collector::Collector(CollectorOptions options) : options_(std::move(options)) {
  const int count = gpumem::device_count();
  std::vector<int> ordinals;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    Identity identity{ordinal, {}, {}};
    if (auto info = device_info(ordinal)) {
      identity.uuid = info->uuid;
      identity.name = info->name;
    }
    devices_.push_back(std::move(identity));
    ordinals.push_back(ordinal);
  }
  set_sampling_interval(options_.interval);
  peaks_ = std::make_unique<WindowPeak>(ordinals, options_.window);
}

Snapshot Collector::collect() {
  Snapshot snapshot;
  snapshot.host = options_.host;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    Identity& identity = devices_[i];
    if (identity.uuid.empty()) {
      // Lost or unreadable at start: its labels may be known now.
      if (auto info = device_info(identity.ordinal)) {
        identity.uuid = info->uuid;
        identity.name = info->name;
      }
    }
    DeviceSample device;
    device.gpu = identity.ordinal;
    device.uuid = identity.uuid;
    device.name = identity.name;
    if (auto memory = gpu_mem_get_bytes(identity.ordinal)) {
      device.up = true;
      device.memory = *memory;
      device.window_peak = peaks_->peak(i);
      if (device.window_peak) {
        // The live reading is part of the window too, and may be newer than the last sample.
        device.window_peak =
            std::max<std::int64_t>(*device.window_peak, static_cast<std::int64_t>(memory->used));
      }
      for (const ProcessMemory& process : device_processes(identity.ordinal)) {
        if (!process.used_bytes) continue;
        snapshot.processes.push_back(ProcessSample{identity.ordinal, identity.uuid, process.pid,
                                                   process_name(process.pid), *process.used_bytes});
      }
    }
    snapshot.devices.push_back(std::move(device));
  }
  collect_traces(snapshot);
  snapshot.exporter.interval_seconds = std::chrono::duration<double>(options_.interval).count();
  snapshot.exporter.window_seconds = std::chrono::duration<double>(options_.window).count();
  snapshot.exporter.scrapes = ++scrapes_;
  return snapshot;
}

void Collector::collect_traces(Snapshot& snapshot) {
  const std::int64_t now = now_unix_ms();
  const std::int64_t retention_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.retention).count();
  // Cleaning up after dead publishers is housekeeping: every 64th scrape is plenty.
  const bool sweep = scrapes_ % 64 == 0;
  for (const auto& spool : options_.spools) {
    SpoolContents contents = read_spool(spool, options_.spool_limits);
    snapshot.exporter.spool_malformed += contents.malformed;
    snapshot.exporter.spool_skipped += contents.skipped;
    for (PublishedTrace& trace : contents.traces) {
      if (!process_alive(trace.pid) && now - trace.unix_ms > retention_ms) {
        std::error_code ignored;
        std::filesystem::remove(trace.file, ignored);
        continue;
      }
      snapshot.traces.push_back(std::move(trace));
    }
    if (sweep) remove_abandoned_temporaries(spool);
  }
}

}  // namespace gpumem::serve
