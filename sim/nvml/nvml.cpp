// The simulated NVML: device identity and memory from the shared state, with the return-code
// protocol of the real library (UNINITIALIZED before nvmlInit, INSUFFICIENT_SIZE sizing, …).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "core/export.hpp"
#include "core/faults.hpp"
#include "core/shared_state.hpp"
#include "driver/abi/nvml.hpp"

struct gpumem::abi::nvmlDevice_st {
  unsigned index;
};

namespace {

using namespace gpumem::abi;
using gpumem::sim::faults;
using gpumem::sim::SharedState;

std::atomic<int> g_init_count{0};

nvmlDevice_st g_handles[gpumem::sim::kMaxDevices] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                                                     {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

SharedState* ready_state() {
  return g_init_count.load(std::memory_order_acquire) > 0 ? SharedState::get() : nullptr;
}

// The state and index behind a handle, or the error to return.
nvmlReturn_t resolve(nvmlDevice_t device, SharedState** state, unsigned* index) {
  *state = ready_state();
  if (*state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (device < g_handles || device >= g_handles + gpumem::sim::kMaxDevices)
    return NVML_ERROR_INVALID_ARGUMENT;
  *index = device->index;
  if (*index >= (*state)->device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

nvmlReturn_t resolve_present(nvmlDevice_t device, SharedState** state, unsigned* index) {
  if (const nvmlReturn_t rc = resolve(device, state, index)) return rc;
  return (*state)->lost(*index) ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

nvmlReturn_t copy_out(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t init(unsigned /*flags*/) {
  if (const auto& code = faults().nvml_init) return *code;
  if (SharedState::get() == nullptr) {
    std::fprintf(stderr, "gpumem-sim: %s\n", SharedState::open_error().c_str());
    return NVML_ERROR_UNKNOWN;
  }
  g_init_count.fetch_add(1, std::memory_order_acq_rel);
  return NVML_SUCCESS;
}

// NVML's index enumeration holds whole GPUs only: a MIG instance is reached under its GPU
// (nvmlDeviceGetMigDeviceHandleByIndex) or by its UUID.
bool is_mig(const SharedState& state, unsigned i) {
  return state.device(i).parent >= 0;
}

// The state index of the `position`-th device that `member` accepts, in state order.
template <class Member>
std::optional<unsigned> nth(const SharedState& state, unsigned position, Member member) {
  for (unsigned i = 0; i < state.device_count(); ++i) {
    if (member(i) && position-- == 0) return i;
  }
  return std::nullopt;
}

// A device's NVML index: its place among the whole GPUs, or a MIG instance's among its siblings.
unsigned nvml_index_of(const SharedState& state, unsigned i) {
  unsigned index = 0;
  for (unsigned j = 0; j < i; ++j) {
    if (state.device(j).parent == state.device(i).parent) ++index;
  }
  return index;
}

nvmlReturn_t handle_by_index(unsigned index, nvmlDevice_t* device) {
  SharedState* state = ready_state();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  const auto found = nth(*state, index, [&](unsigned i) { return !is_mig(*state, i); });
  if (device == nullptr || !found) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_handles[*found];
  return NVML_SUCCESS;
}

nvmlReturn_t device_count(unsigned* count) {
  SharedState* state = ready_state();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 0;
  for (unsigned i = 0; i < state->device_count(); ++i) *count += is_mig(*state, i) ? 0 : 1;
  return NVML_SUCCESS;
}

// v1 writes only the fields an old nvmlPciInfo_t has (16-byte bus id, then the numbers).
nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t* pci, bool legacy_layout) {
  SharedState* state;
  unsigned index;
  if (const nvmlReturn_t rc = resolve(device, &state, &index)) return rc;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& address = state->device(index).pci;
  const std::string legacy = gpumem::sim::nvml_legacy_bus_id(address);
  std::memset(pci->busIdLegacy, 0, sizeof pci->busIdLegacy);
  std::memcpy(pci->busIdLegacy, legacy.c_str(),
              std::min(legacy.size(), sizeof pci->busIdLegacy - 1));
  pci->domain = address.domain;
  pci->bus = address.bus;
  pci->device = address.device;
  pci->pciDeviceId = 0x233510DE;
  pci->pciSubSystemId = 0x18BE10DE;
  if (!legacy_layout) {
    const std::string full = gpumem::sim::nvml_bus_id(address);
    std::memset(pci->busId, 0, sizeof pci->busId);
    std::memcpy(pci->busId, full.c_str(), full.size());
  }
  return NVML_SUCCESS;
}

// What a `_v3` record is in the simulated driver generation (24 bytes unless configured otherwise).
unsigned v3_record_bytes() {
  SharedState* state = ready_state();
  return state != nullptr ? state->file().process_record_bytes : 24;
}

// The running-process protocol: too small a buffer answers INSUFFICIENT_SIZE with the count
// needed. `stride` is the record size the caller's driver generation writes.
nvmlReturn_t running_processes(nvmlDevice_t device, unsigned* count, void* infos, unsigned stride,
                               bool graphics) {
  SharedState* state;
  unsigned index;
  if (const nvmlReturn_t rc = resolve_present(device, &state, &index)) return rc;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // A slow list (a busy multi-GPU node), read halfway through the call: the `nvml_process_delay`
  // fault (docs/simulator.md).
  const long delay_us = graphics ? 0 : faults().nvml_process_delay_us;
  if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us / 2));
  const auto processes = graphics ? decltype(state->processes(index)){} : state->processes(index);
  if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us - delay_us / 2));
  if (*count < processes.size()) {
    *count = static_cast<unsigned>(processes.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (!processes.empty() && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* out = static_cast<unsigned char*>(infos);
  for (const auto& process : processes) {
    nvmlProcessDetail_v1_t record{};
    record.pid = process.pid + state->file().nvml_pid_offset;
    record.usedGpuMemory = process.bytes;
    record.gpuInstanceId = 0xFFFFFFFFu;
    record.computeInstanceId = 0xFFFFFFFFu;
    std::memcpy(out, &record, stride);
    out += stride;
  }
  *count = static_cast<unsigned>(processes.size());
  return NVML_SUCCESS;
}

const char* error_text(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    case NVML_ERROR_NOT_READY:
      return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU not found";
    default:
      return "Unknown Error";
  }
}

}  // namespace

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlInit_v2() {
  return init(0);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlInit() {
  return init(0);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags) {
  return init(flags);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlShutdown() {
  int count = g_init_count.load();
  while (count > 0 && !g_init_count.compare_exchange_weak(count, count - 1)) {
  }
  return count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

GPUMEM_SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  return error_text(result);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned length) {
  SharedState* state = ready_state();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  return copy_out(state->file().driver_version, version, length);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  SharedState* state = ready_state();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *version = state->file().cuda_driver_version;
  return NVML_SUCCESS;
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return nvmlSystemGetCudaDriverVersion(version);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  return device_count(count);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned* count) {
  return device_count(count);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  return handle_by_index(index, device);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t* device) {
  return handle_by_index(index, device);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  SharedState* state = ready_state();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < state->device_count(); ++i) {
    if (std::strcmp(state->device(i).uuid, uuid) == 0) {
      *device = &g_handles[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id,
                                                                nvmlDevice_t* device) {
  SharedState* state = ready_state();
  if (state == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (bus_id == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto wanted = gpumem::sim::parse_pci_bus_id(bus_id);
  if (!wanted) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < state->device_count(); ++i) {
    if (!is_mig(*state, i) && state->device(i).pci == *wanted) {
      *device = &g_handles[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id,
                                                             nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(bus_id, device);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned* index) {
  SharedState* state;
  unsigned i;
  if (const nvmlReturn_t rc = resolve(device, &state, &i)) return rc;
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = nvml_index_of(*state, i);
  return NVML_SUCCESS;
}

// Zero for a GPU without MIG instances, as for one with MIG disabled.
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                              unsigned* count) {
  SharedState* state;
  unsigned i;
  if (const nvmlReturn_t rc = resolve(device, &state, &i)) return rc;
  if (count == nullptr || is_mig(*state, i)) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 0;
  for (unsigned j = 0; j < state->device_count(); ++j) {
    if (state->device(j).parent == static_cast<int>(i)) ++*count;
  }
  return NVML_SUCCESS;
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                   unsigned index,
                                                                   nvmlDevice_t* mig) {
  SharedState* state;
  unsigned i;
  if (const nvmlReturn_t rc = resolve(device, &state, &i)) return rc;
  if (mig == nullptr || is_mig(*state, i)) return NVML_ERROR_INVALID_ARGUMENT;
  const auto found = nth(
      *state, index, [&](unsigned j) { return state->device(j).parent == static_cast<int>(i); });
  if (!found) return NVML_ERROR_NOT_FOUND;
  *mig = &g_handles[*found];
  return NVML_SUCCESS;
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned length) {
  SharedState* state;
  unsigned index;
  if (const nvmlReturn_t rc = resolve(device, &state, &index)) return rc;
  return copy_out(state->device(index).name, name, length);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned length) {
  SharedState* state;
  unsigned index;
  if (const nvmlReturn_t rc = resolve(device, &state, &index)) return rc;
  return copy_out(state->device(index).uuid, uuid, length);
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(device, pci, false);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(device, pci, false);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(device, pci, true);
}

// v1: `used` includes the driver's reservation, as real drivers report it.
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (faults().nvml_memory_v2_only) return NVML_ERROR_NOT_SUPPORTED;
  SharedState* state;
  unsigned index;
  if (const nvmlReturn_t rc = resolve_present(device, &state, &index)) return rc;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto numbers = state->memory(index);
  memory->total = numbers.total;
  memory->used = numbers.reserved + numbers.used;
  memory->free = numbers.free();
  return NVML_SUCCESS;
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                          nvmlMemory_v2_t* memory) {
  if (faults().nvml_memory_v1_only) return NVML_ERROR_FUNCTION_NOT_FOUND;
  SharedState* state;
  unsigned index;
  if (const nvmlReturn_t rc = resolve_present(device, &state, &index)) return rc;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != kNvmlMemory_v2) return NVML_ERROR_FUNCTION_NOT_FOUND;
  const auto numbers = state->memory(index);
  memory->total = numbers.total;
  memory->reserved = numbers.reserved;
  memory->used = numbers.used;
  memory->free = numbers.free();
  return NVML_SUCCESS;
}

GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                       unsigned* count,
                                                                       void* infos) {
  return running_processes(device, count, infos, v3_record_bytes(), false);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                        unsigned* count,
                                                                        void* infos) {
  return running_processes(device, count, infos, v3_record_bytes(), true);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                       unsigned* count,
                                                                       void* infos) {
  return running_processes(device, count, infos, sizeof(nvmlProcessInfo_v2_t), false);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                        unsigned* count,
                                                                        void* infos) {
  return running_processes(device, count, infos, sizeof(nvmlProcessInfo_v2_t), true);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                    unsigned* count, void* infos) {
  return running_processes(device, count, infos, sizeof(nvmlProcessInfo_v1_t), false);
}
GPUMEM_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                                     unsigned* count, void* infos) {
  return running_processes(device, count, infos, sizeof(nvmlProcessInfo_v1_t), true);
}

GPUMEM_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, nvmlProcessDetailList_v1_t* list) {
  if (list == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (list->version != kNvmlProcessDetailList_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (list->mode > 3) return NVML_ERROR_INVALID_ARGUMENT;
  // Every simulated process is a compute process: graphics and MPS lists are empty.
  const bool compute = list->mode == 0 || list->mode == 3;
  return running_processes(device, &list->numProcArrayEntries, list->procArray,
                           sizeof(nvmlProcessDetail_v1_t), !compute);
}

// Simulator control: marks a device lost (or back) in every process sharing the state.
GPUMEM_SIM_EXPORT int gpumemSimSetLost(unsigned nvml_index, int lost) {
  SharedState* state = SharedState::get();
  if (state == nullptr || nvml_index >= state->device_count()) return -1;
  state->set_lost(nvml_index, lost != 0);
  return 0;
}
