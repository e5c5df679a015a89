#include "collector.hpp"

#include <iostream>

#include "gpumem/device.hpp"
#include "gpumem/internal/clock.hpp"
#include "gpumem/internal/printable_text.hpp"

namespace gpumem::serve {
namespace {

// How old a process's labels may get: a collection rereads /proc for a process only when it is
// new or its labels are this old, so at the default 1 s collections a tenth of the known
// processes a collection, and a rename or a move to another cgroup shows within 10 s.
constexpr std::chrono::seconds kLabelMaxAge{10};

}  // namespace

Collector::Collector(CollectorOptions options)
    : options_(std::move(options)),
      containers_(options_.proc, options_.containers),
      labels_(containers_, kLabelMaxAge) {
  pid_namespace_ = own_pid_namespace();
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
  peaks_ = std::make_shared<WindowPeak>(ordinals, options_.window, options_.interval);
}

Snapshot Collector::collect() {
  Snapshot snapshot;
  snapshot.host = options_.host;
  const std::int64_t now_ns = support::monotonic_ns();
  containers_.refresh();
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
      // The reading served is part of the window too, and may be newer than the last sample.
      peaks_->note(i, static_cast<std::int64_t>(memory->used));
      device.window_peak = peaks_->peak(i);
      for (const ProcessMemory& process : device_processes(identity.ordinal)) {
        if (!process.used_bytes) continue;
        const ProcessLabels& labels = labels_.labels(process.pid, now_ns);
        snapshot.processes.push_back(ProcessSample{identity.ordinal, identity.uuid, process.pid,
                                                   labels.name, *process.used_bytes,
                                                   labels.container});
      }
    }
    snapshot.devices.push_back(std::move(device));
  }
  labels_.end_collection();
  snapshot.live_peaks = peaks_;
  collect_traces(snapshot);
  snapshot.exporter.interval_seconds = std::chrono::duration<double>(options_.interval).count();
  snapshot.exporter.window_seconds = std::chrono::duration<double>(options_.window).count();
  return snapshot;
}

void Collector::collect_traces(Snapshot& snapshot) {
  detail::SpoolExpiry expiry;
  expiry.now_unix_ms = support::unix_time_ms();
  expiry.retention_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.retention).count();
  expiry.proc = options_.proc;
  PublisherLiveness liveness(options_.proc);
  expiry.running = [&liveness](const detail::PublishedTrace& trace) {
    return liveness.running(trace);
  };
  for (const auto& spool : options_.spools) {
    detail::SpoolContents contents = detail::read_spool(spool, options_.spool_limits, &expiry);
    snapshot.exporter.spool_malformed += contents.malformed;
    snapshot.exporter.spool_unreadable += contents.unreadable;
    snapshot.exporter.spool_dropped += contents.dropped;
    snapshot.exporter.spool_refused += contents.refused.empty() ? 0 : 1;
    if (std::string& logged = refusals_[spool]; logged != contents.refused) {
      // A directory trusted at the start may be replaced later (or appear, made by someone else).
      if (!contents.refused.empty()) {
        std::cerr << "gpumem serve: refusing the spool directory "
                  << detail::printable(spool.string()) << ": "
                  << detail::printable(contents.refused) << "; its records are not exported\n";
      } else if (!logged.empty()) {
        std::cerr << "gpumem serve: reading the spool directory "
                  << detail::printable(spool.string()) << " again\n";
      }
      logged = contents.refused;
    }
    for (detail::PublishedTrace& trace : contents.traces) {
      snapshot.traces.push_back(std::move(trace));
    }
  }
  // Two files of one series (a spool given twice, a stale copy, a forgery) would make two samples
  // of one series, which Prometheus rejects: the newest is shown.
  snapshot.pid_namespace = pid_namespace_;
  keep_newest_per_series(snapshot.traces, pid_namespace_);
}

}  // namespace gpumem::serve
