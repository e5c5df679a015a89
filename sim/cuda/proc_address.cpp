// cuGetProcAddress: the driver's entry-point table, as NVIDIA's CUDA Driver API documents it
// ("Driver Entry Point Access"). A caller names a function by its base name (cuMemAlloc) and the
// CUDA version whose ABI it was built for (3020); the driver answers the newest variant of that
// function introduced at or before that version (cuMemAlloc_v2, introduced in 3.2; cuMemAlloc in
// 2.0 for older callers). CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM prefers the per-thread
// default stream variants (_ptsz/_ptds) where one exists. NVIDIA's own clients resolve every
// function this way (cuda-bindings, the runtime, CUDA Python), never through dlsym.
//
// The variants and the versions that introduced them are those of NVIDIA's cudaTypedefs.h
// (PFN_<name>_v<version>[_ptsz|_ptds]). Each answer is the simulator's own export of that
// variant, found in this library's dynamic symbol table, so a variant the simulator does not
// implement resolves to nothing (CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND), as on a driver that lacks
// it. tests/clients/proc_address_test.cpp checks that every export in cuda.map is reachable here.
#include <dlfcn.h>

#include <cstdint>
#include <string_view>

#include "core/export.hpp"
#include "driver/abi/cuda.hpp"

using gpumem::abi::CUresult;

namespace {

// cuda.h's CUdriverProcAddress_flags and CUdriverProcAddressQueryResult.
enum : std::uint64_t {
  kDefault = 0,
  kLegacyStream = 1 << 0,
  kPerThreadDefaultStream = 1 << 1,
};
enum QueryResult : int { kFound = 0, kSymbolNotFound = 1, kVersionNotSufficient = 2 };

struct Variant {
  std::string_view name;    // the base name callers ask for
  const char* symbol;       // the exported symbol of this variant
  int introduced;           // the CUDA version that introduced it (cudaTypedefs.h)
  bool per_thread = false;  // a _ptsz/_ptds variant
};

// Driver functions by family; one line per variant (cudaTypedefs.h, CUDA 13.0).
constexpr Variant kVariants[] = {
    {"cuGetErrorString", "cuGetErrorString", 6000},
    {"cuGetErrorName", "cuGetErrorName", 6000},
    {"cuInit", "cuInit", 2000},
    {"cuDriverGetVersion", "cuDriverGetVersion", 2020},
    {"cuGetProcAddress", "cuGetProcAddress", 11030},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000},
    // Devices.
    {"cuDeviceGet", "cuDeviceGet", 2000},
    {"cuDeviceGetCount", "cuDeviceGetCount", 2000},
    {"cuDeviceGetName", "cuDeviceGetName", 2000},
    {"cuDeviceGetUuid", "cuDeviceGetUuid", 9020},
    {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040},
    {"cuDeviceGetPCIBusId", "cuDeviceGetPCIBusId", 4010},
    {"cuDeviceGetByPCIBusId", "cuDeviceGetByPCIBusId", 4010},
    {"cuDeviceTotalMem", "cuDeviceTotalMem", 2000},
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020},
    {"cuDeviceGetAttribute", "cuDeviceGetAttribute", 2000},
    {"cuDeviceComputeCapability", "cuDeviceComputeCapability", 2000},
    // Contexts.
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease", 7000},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000},
    {"cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", 7000},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset", 7000},
    {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 11000},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags", 7000},
    {"cuDevicePrimaryCtxSetFlags", "cuDevicePrimaryCtxSetFlags_v2", 11000},
    {"cuCtxCreate", "cuCtxCreate", 2000},
    {"cuCtxCreate", "cuCtxCreate_v2", 3020},
    {"cuCtxCreate", "cuCtxCreate_v3", 11040},
    {"cuCtxCreate", "cuCtxCreate_v4", 12050},
    {"cuCtxDestroy", "cuCtxDestroy", 2000},
    {"cuCtxDestroy", "cuCtxDestroy_v2", 4000},
    {"cuCtxPushCurrent", "cuCtxPushCurrent", 2000},
    {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000},
    {"cuCtxPopCurrent", "cuCtxPopCurrent", 2000},
    {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000},
    {"cuCtxSetCurrent", "cuCtxSetCurrent", 4000},
    {"cuCtxGetCurrent", "cuCtxGetCurrent", 4000},
    {"cuCtxGetDevice", "cuCtxGetDevice", 2000},
    {"cuCtxGetDevice", "cuCtxGetDevice_v2", 13000},
    {"cuCtxSynchronize", "cuCtxSynchronize", 2000},
    {"cuCtxSynchronize", "cuCtxSynchronize_v2", 13000},
    {"cuCtxGetApiVersion", "cuCtxGetApiVersion", 3020},
    {"cuCtxGetId", "cuCtxGetId", 12000},
    // Modules.
    {"cuModuleLoad", "cuModuleLoad", 2000},
    {"cuModuleLoadData", "cuModuleLoadData", 2000},
    {"cuModuleLoadDataEx", "cuModuleLoadDataEx", 2010},
    {"cuModuleLoadFatBinary", "cuModuleLoadFatBinary", 2000},
    {"cuModuleUnload", "cuModuleUnload", 2000},
    {"cuModuleGetFunction", "cuModuleGetFunction", 2000},
    {"cuModuleGetGlobal", "cuModuleGetGlobal", 2000},
    {"cuModuleGetGlobal", "cuModuleGetGlobal_v2", 3020},
    {"cuLaunchKernel", "cuLaunchKernel", 4000},
    {"cuLaunchKernel", "cuLaunchKernel_ptsz", 7000, true},
    {"cuLibraryLoadData", "cuLibraryLoadData", 12000},
    {"cuLibraryLoadFromFile", "cuLibraryLoadFromFile", 12000},
    {"cuLibraryUnload", "cuLibraryUnload", 12000},
    // Memory.
    {"cuMemGetInfo", "cuMemGetInfo", 2000},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020},
    {"cuMemAlloc", "cuMemAlloc", 2000},
    {"cuMemAlloc", "cuMemAlloc_v2", 3020},
    {"cuMemAllocPitch", "cuMemAllocPitch", 2000},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020},
    {"cuMemFree", "cuMemFree", 2000},
    {"cuMemFree", "cuMemFree_v2", 3020},
    {"cuMemGetAddressRange", "cuMemGetAddressRange", 2000},
    {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020},
    {"cuMemAllocManaged", "cuMemAllocManaged", 6000},
    {"cuMemAllocHost", "cuMemAllocHost", 2000},
    {"cuMemAllocHost", "cuMemAllocHost_v2", 3020},
    {"cuMemFreeHost", "cuMemFreeHost", 2000},
    {"cuMemHostAlloc", "cuMemHostAlloc", 2020},
    {"cuPointerGetAttribute", "cuPointerGetAttribute", 4000},
    {"cuMemAdvise", "cuMemAdvise", 8000},
    {"cuMemAdvise", "cuMemAdvise_v2", 12020},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync", 8000},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync_ptsz", 8000, true},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync_v2", 12020},
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync_v2_ptsz", 12020, true},
    // Virtual memory management.
    {"cuMemAddressReserve", "cuMemAddressReserve", 10020},
    {"cuMemAddressFree", "cuMemAddressFree", 10020},
    {"cuMemCreate", "cuMemCreate", 10020},
    {"cuMemRelease", "cuMemRelease", 10020},
    {"cuMemMap", "cuMemMap", 10020},
    {"cuMemUnmap", "cuMemUnmap", 10020},
    {"cuMemSetAccess", "cuMemSetAccess", 10020},
    {"cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", 10020},
    {"cuMemRetainAllocationHandle", "cuMemRetainAllocationHandle", 11000},
    {"cuMemGetAllocationPropertiesFromHandle", "cuMemGetAllocationPropertiesFromHandle", 10020},
    {"cuMemExportToShareableHandle", "cuMemExportToShareableHandle", 10020},
    {"cuMemImportFromShareableHandle", "cuMemImportFromShareableHandle", 10020},
    // Stream-ordered allocation and pools.
    {"cuMemAllocAsync", "cuMemAllocAsync", 11020},
    {"cuMemAllocAsync", "cuMemAllocAsync_ptsz", 11020, true},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", 11020, true},
    {"cuMemFreeAsync", "cuMemFreeAsync", 11020},
    {"cuMemFreeAsync", "cuMemFreeAsync_ptsz", 11020, true},
    {"cuDeviceGetMemPool", "cuDeviceGetMemPool", 11020},
    {"cuDeviceSetMemPool", "cuDeviceSetMemPool", 11020},
    {"cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020},
    {"cuMemPoolCreate", "cuMemPoolCreate", 11020},
    {"cuMemPoolDestroy", "cuMemPoolDestroy", 11020},
    {"cuMemPoolGetAttribute", "cuMemPoolGetAttribute", 11020},
    {"cuMemPoolSetAttribute", "cuMemPoolSetAttribute", 11020},
    {"cuMemPoolTrimTo", "cuMemPoolTrimTo", 11020},
    {"cuMemPoolSetAccess", "cuMemPoolSetAccess", 11020},
    // Streams and events.
    {"cuStreamCreate", "cuStreamCreate", 2000},
    {"cuStreamCreateWithPriority", "cuStreamCreateWithPriority", 5050},
    {"cuStreamQuery", "cuStreamQuery", 2000},
    {"cuStreamQuery", "cuStreamQuery_ptsz", 7000, true},
    {"cuStreamBeginCapture", "cuStreamBeginCapture", 10000},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_ptsz", 10000, true},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2", 10010},
    {"cuStreamBeginCapture", "cuStreamBeginCapture_v2_ptsz", 10010, true},
    {"cuStreamEndCapture", "cuStreamEndCapture", 10000},
    {"cuStreamEndCapture", "cuStreamEndCapture_ptsz", 10000, true},
    {"cuStreamDestroy", "cuStreamDestroy", 2000},
    {"cuStreamDestroy", "cuStreamDestroy_v2", 4000},
    {"cuStreamSynchronize", "cuStreamSynchronize", 2000},
    {"cuStreamSynchronize", "cuStreamSynchronize_ptsz", 7000, true},
    {"cuEventSynchronize", "cuEventSynchronize", 2000},
    {"cuEventCreate", "cuEventCreate", 2000},
    {"cuEventRecord", "cuEventRecord", 2000},
    {"cuEventRecord", "cuEventRecord_ptsz", 7000, true},
    {"cuEventDestroy", "cuEventDestroy", 2000},
    {"cuEventDestroy", "cuEventDestroy_v2", 4000},
    // Graphs and graph memory.
    {"cuGraphCreate", "cuGraphCreate", 10000},
    {"cuGraphDestroy", "cuGraphDestroy", 10000},
    {"cuGraphAddMemAllocNode", "cuGraphAddMemAllocNode", 11040},
    {"cuGraphAddMemFreeNode", "cuGraphAddMemFreeNode", 11040},
    {"cuGraphMemAllocNodeGetParams", "cuGraphMemAllocNodeGetParams", 11040},
    {"cuGraphMemFreeNodeGetParams", "cuGraphMemFreeNodeGetParams", 11040},
    {"cuGraphInstantiate", "cuGraphInstantiate", 10000},
    {"cuGraphInstantiate", "cuGraphInstantiate_v2", 11000},
    {"cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", 11040},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams", 12000},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz", 12000, true},
    {"cuGraphLaunch", "cuGraphLaunch", 10000},
    {"cuGraphLaunch", "cuGraphLaunch_ptsz", 10000, true},
    {"cuGraphUpload", "cuGraphUpload", 11010},
    {"cuGraphUpload", "cuGraphUpload_ptsz", 11010, true},
    {"cuGraphExecDestroy", "cuGraphExecDestroy", 10000},
    {"cuDeviceGetGraphMemAttribute", "cuDeviceGetGraphMemAttribute", 11040},
    {"cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim", 11040},
    {"cuDeviceSetGraphMemAttribute", "cuDeviceSetGraphMemAttribute", 11040},
};

// This library, opened again by its own path (RTLD_NOLOAD: it is loaded, since this code runs).
void* self() {
  static void* const handle = [] {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&self), &info) == 0 || info.dli_fname == nullptr) {
      return static_cast<void*>(nullptr);
    }
    return ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  }();
  return handle;
}

// The variant the documented rules choose: the newest introduced at or before cuda_version,
// per-thread ones first when asked for.
const Variant* choose(std::string_view name, int cuda_version, bool per_thread, bool* known) {
  const Variant* best = nullptr;
  for (const Variant& v : kVariants) {
    if (v.name != name) continue;
    *known = true;
    if (v.introduced > cuda_version || (v.per_thread && !per_thread)) continue;
    const bool better = best == nullptr || (v.per_thread && !best->per_thread) ||
                        (v.per_thread == best->per_thread && v.introduced >= best->introduced);
    if (better) best = &v;
  }
  return best;
}

}  // namespace

GPUMEM_SIM_EXPORT CUresult cuDriverGetVersion(int* version);  // cuda_api.cpp

GPUMEM_SIM_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                               std::uint64_t flags, int* symbol_status) {
  if (pfn != nullptr) *pfn = nullptr;
  if (symbol == nullptr || pfn == nullptr) return gpumem::abi::CUDA_ERROR_INVALID_VALUE;
  if ((flags & ~std::uint64_t{kLegacyStream | kPerThreadDefaultStream}) != 0) {
    return gpumem::abi::CUDA_ERROR_INVALID_VALUE;
  }
  // "If the specified CUDA version is greater than the driver version, the API will return
  // CUDA_ERROR_INVALID_VALUE."
  int driver_version = 0;
  if (cuDriverGetVersion(&driver_version) != gpumem::abi::CUDA_SUCCESS ||
      cuda_version > driver_version) {
    return gpumem::abi::CUDA_ERROR_INVALID_VALUE;
  }
  // DEFAULT is the legacy stream unless the caller was compiled for the per-thread stream, which
  // only its own headers know (the runtime passes PER_THREAD_DEFAULT_STREAM explicitly then).
  const bool per_thread = (flags & kPerThreadDefaultStream) != 0;
  bool known = false;
  const Variant* variant = choose(symbol, cuda_version, per_thread, &known);
  void* address =
      variant != nullptr && self() != nullptr ? ::dlsym(self(), variant->symbol) : nullptr;
  if (address == nullptr && variant != nullptr && variant->per_thread) {
    // "If a per-thread version is not found, the API will return the legacy version."
    variant = choose(symbol, cuda_version, false, &known);
    address = variant != nullptr && self() != nullptr ? ::dlsym(self(), variant->symbol) : nullptr;
  }
  *pfn = address;
  if (symbol_status != nullptr) {
    *symbol_status = address != nullptr            ? kFound
                     : known && variant == nullptr ? kVersionNotSufficient
                                                   : kSymbolNotFound;
  }
  return gpumem::abi::CUDA_SUCCESS;
}

GPUMEM_SIM_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                            std::uint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, nullptr);
}
