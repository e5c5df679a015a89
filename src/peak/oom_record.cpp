#include "peak/oom_record.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "attribution/materialize.hpp"
#include "attribution/stacks.hpp"
#include "driver/cuda.hpp"
#include "gpumem/device.hpp"
#include "gpumem/internal/device_uuid.hpp"
#include "gpumem/internal/procfs.hpp"
#include "gpumem/memory.hpp"
#include "peak/attribution_recorder.hpp"
#include "peak/channels.hpp"
#include "peak/footprint.hpp"

namespace gpumem::peak {
namespace {

// Written whole or not at all: a temporary file renamed over the target.
void write_report(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return;
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) std::filesystem::remove(temporary, error);
}

}  // namespace

SnapshotDevice snapshot_device(int device) noexcept {
  SnapshotDevice identity;
  identity.device = device;
  try {
    if (footprint::reconciling()) {
      if (const auto info = device_info(device)) {
        identity.uuid = info->uuid;
        identity.name = info->name;
      }
      if (const auto memory = gpu_mem_get_bytes(device)) identity.total_bytes = memory->total;
    } else if (const auto uuid = driver::device_uuid(device)) {
      // Without NVML (the gpumem run injection library): the driver's UUID, which names a
      // physical GPU or a MIG device with the same bytes NVML's does, without its prefix.
      identity.uuid = driver::uuid_text(*uuid);
    }
    if (identity.total_bytes == 0) {
      if (const auto memory = driver::driver_memory(device)) identity.total_bytes = memory->total;
    }
  } catch (...) {
    // Out of memory for the strings: the device by ordinal only.
  }
  return identity;
}

void allocation_failed(int device, std::uint64_t bytes, BlockKind kind) noexcept {
  try {
    gpumem::attribution::RawMoment moment;
    moment.what = "oom";
    moment.device = device;
    moment.attributed = attribution::active();
    Channel* exact = channel(Stream::exact, device);
    if (exact != nullptr && moment.attributed) {
      attribution::RawSnapshot live = attribution::live(*exact, device);
      moment.level = live.level;
      moment.time_ns = live.time_ns;
      moment.blocks = std::move(live.blocks);
    } else {
      moment.level = exact != nullptr ? exact->level() : 0;
      moment.time_ns = attribution::now_ns();
    }
    gpumem::attribution::RawFailure failure;
    failure.bytes = bytes;
    failure.kind = static_cast<std::uint8_t>(kind);
    failure.stack = gpumem::attribution::capture_stack();
    failure.error = "CUDA_ERROR_OUT_OF_MEMORY";
    const driver::Cuda& cuda = driver::cuda();
    std::size_t free = 0, total = 0;
    if (cuda.memGetInfo != nullptr && cuda.memGetInfo(&free, &total) == abi::CUDA_SUCCESS) {
      failure.free_bytes = free;
      failure.total_bytes = total;
    }
    moment.failure = failure;
    // NVML only where the exact source may start it (not in the gpumem run injection library).
    if (footprint::reconciling()) {
      moment.other_processes_read = true;
      const unsigned self = static_cast<unsigned>(::getpid());
      for (const ProcessMemory& process : device_processes(device)) {
        if (process.pid == self) continue;
        moment.other_processes.push_back(
            {process.pid, procfs::command_name("/proc", std::to_string(process.pid)).value_or(""),
             process.used_bytes.value_or(0)});
      }
    }
    moment.device_identity = snapshot_device(device);
    if (moment.device_identity.total_bytes == 0) moment.device_identity.total_bytes = total;
    AttributionSnapshot snapshot = gpumem::attribution::materialize(moment);
    if (const char* path = std::getenv("GPUMEM_OOM_REPORT"); path != nullptr && *path != '\0') {
      write_report(path, snapshot.to_json());
    }
    gpumem::attribution::set_last_oom(std::move(snapshot));
  } catch (...) {
    // Out of host memory while recording a failure: the program gets its error, unrecorded.
  }
}

}  // namespace gpumem::peak
