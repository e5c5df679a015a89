// The subset of NVML's C ABI that gpumem uses, declared by hand so that neither building nor
// running needs NVIDIA's headers. Layouts were checked against nvml.h (NVML API 13); the
// static_asserts pin them so a careless edit cannot silently break binary compatibility.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpumem::abi {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_UNKNOWN = 999,
};

enum : unsigned {
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
};

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
// NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, the version in the top byte. Passing a
// bare 2 makes the driver answer FUNCTION_NOT_FOUND.
inline constexpr unsigned kNvmlMemory_v2 =
    static_cast<unsigned>(sizeof(nvmlMemory_v2_t) | (2u << 24));

struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
struct nvmlProcessDetail_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};
struct nvmlProcessDetailList_v1_t {
  unsigned int version, mode, numProcArrayEntries;  // mode: 0 compute, 1 graphics, 2 MPS
  nvmlProcessDetail_v1_t* procArray;
};
inline constexpr unsigned kNvmlProcessDetailList_v1 =
    static_cast<unsigned>(sizeof(nvmlProcessDetailList_v1_t) | (1u << 24));
// usedGpuMemory is all ones where the driver cannot tell (WDDM, some containers).
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ull;

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40 && offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(kNvmlMemory_v2 == 0x02000028);
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16);
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24);
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32);
static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24 && kNvmlProcessDetailList_v1 == 0x01000018);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);

// Function types, named after the symbol dlsym resolves.
using PFN_nvmlInit_v2 = nvmlReturn_t (*)();
using PFN_nvmlInitWithFlags = nvmlReturn_t (*)(unsigned flags);
using PFN_nvmlShutdown = nvmlReturn_t (*)();
using PFN_nvmlErrorString = const char* (*)(nvmlReturn_t);
using PFN_nvmlSystemGetDriverVersion = nvmlReturn_t (*)(char* version, unsigned length);
using PFN_nvmlDeviceGetCount = nvmlReturn_t (*)(unsigned* count);
using PFN_nvmlDeviceGetHandleByIndex = nvmlReturn_t (*)(unsigned index, nvmlDevice_t* device);
using PFN_nvmlDeviceGetHandleByUUID = nvmlReturn_t (*)(const char* uuid, nvmlDevice_t* device);
using PFN_nvmlDeviceGetHandleByPciBusId = nvmlReturn_t (*)(const char* bus_id, nvmlDevice_t* dev);
using PFN_nvmlDeviceGetIndex = nvmlReturn_t (*)(nvmlDevice_t device, unsigned* index);
// MIG: 0 instances where MIG is off; NOT_FOUND for an index that holds none.
using PFN_nvmlDeviceGetMaxMigDeviceCount = nvmlReturn_t (*)(nvmlDevice_t device, unsigned* count);
using PFN_nvmlDeviceGetMigDeviceHandleByIndex = nvmlReturn_t (*)(nvmlDevice_t device,
                                                                 unsigned index,
                                                                 nvmlDevice_t* mig_device);
using PFN_nvmlDeviceGetName = nvmlReturn_t (*)(nvmlDevice_t device, char* name, unsigned length);
using PFN_nvmlDeviceGetUUID = nvmlReturn_t (*)(nvmlDevice_t device, char* uuid, unsigned length);
using PFN_nvmlDeviceGetPciInfo = nvmlReturn_t (*)(nvmlDevice_t device, nvmlPciInfo_t* pci);
using PFN_nvmlDeviceGetMemoryInfo = nvmlReturn_t (*)(nvmlDevice_t device, nvmlMemory_t* memory);
using PFN_nvmlDeviceGetMemoryInfo_v2 = nvmlReturn_t (*)(nvmlDevice_t device, nvmlMemory_v2_t* mem);
// "nvmlDeviceGet{Compute,Graphics}RunningProcesses_v3": the entry stride is 24 or 32 bytes
// depending on the driver, hence the untyped buffer (the caller probes the stride).
using PFN_nvmlDeviceGetRunningProcesses = nvmlReturn_t (*)(nvmlDevice_t device, unsigned* count,
                                                           void* infos);
using PFN_nvmlDeviceGetRunningProcessDetailList =
    nvmlReturn_t (*)(nvmlDevice_t device, nvmlProcessDetailList_v1_t* list);

}  // namespace gpumem::abi
