// The driver, runtime and CUPTI calls of tests/device/real_gpu_check.cpp, loaded at run time as
// gpumem loads them (never linked): libcuda.so.1 (GPUMEM_CUDA_LIBRARY if set, so that the same
// binary runs against the simulator), the CUDA runtime (REAL_GPU_CHECK_CUDART, else
// libcudart.so.13, else .12) and the CUPTI gpumem mapped into this process. The declarations are
// gpumem's own, which tests/abi checks against NVIDIA's headers.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>

#include "driver/abi/cuda.hpp"
#include "driver/abi/cupti.hpp"

namespace real_gpu {

using namespace gpumem::abi;

inline void* open_first(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (name == nullptr || *name == '\0') continue;
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_GLOBAL)) return handle;
  }
  return nullptr;
}

template <class Fn>
Fn symbol(void* library, const char* name) {
  return library == nullptr ? nullptr : reinterpret_cast<Fn>(::dlsym(library, name));
}

// The driver calls the patterns make, by their exported (versioned) names.
struct Driver {
  void* library = nullptr;
  PFN_cuInit init = nullptr;
  PFN_cuDeviceGet deviceGet = nullptr;
  PFN_cuDevicePrimaryCtxRetain primaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxGetState primaryCtxGetState = nullptr;
  PFN_cuCtxSetCurrent ctxSetCurrent = nullptr;
  PFN_cuMemAlloc memAlloc = nullptr;
  PFN_cuMemFree memFree = nullptr;
  using MemGetAllocationGranularity = CUresult (*)(size_t*, const CUmemAllocationProp*, int);
  MemGetAllocationGranularity memGetAllocationGranularity = nullptr;
  PFN_cuMemCreate memCreate = nullptr;
  using MemAddressReserve = CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                                         unsigned long long);
  MemAddressReserve memAddressReserve = nullptr;
  using MemAddressFree = CUresult (*)(CUdeviceptr, size_t);
  MemAddressFree memAddressFree = nullptr;
  PFN_cuMemMap memMap = nullptr;
  using MemSetAccess = CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  MemSetAccess memSetAccess = nullptr;
  PFN_cuMemRelease memRelease = nullptr;
  PFN_cuMemUnmap memUnmap = nullptr;
  PFN_cuDeviceGetMemPool deviceGetMemPool = nullptr;
  PFN_cuMemPoolGetAttribute memPoolGetAttribute = nullptr;
  using MemPoolSetAttribute = CUresult (*)(CUmemoryPool, int, void*);
  MemPoolSetAttribute memPoolSetAttribute = nullptr;
  PFN_cuMemPoolTrimTo memPoolTrimTo = nullptr;
  PFN_cuMemAllocAsync memAllocAsync = nullptr;
  PFN_cuMemFreeAsync memFreeAsync = nullptr;
  using StreamSynchronize = CUresult (*)(CUstream);
  StreamSynchronize streamSynchronize = nullptr;
  using GraphCreate = CUresult (*)(CUgraph*, unsigned);
  GraphCreate graphCreate = nullptr;
  using GraphAddMemAllocNode = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                            CUDA_MEM_ALLOC_NODE_PARAMS*);
  GraphAddMemAllocNode graphAddMemAllocNode = nullptr;
  using GraphAddMemFreeNode = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                           CUdeviceptr);
  GraphAddMemFreeNode graphAddMemFreeNode = nullptr;
  using GraphInstantiateWithFlags = CUresult (*)(CUgraphExec*, CUgraph, unsigned long long);
  GraphInstantiateWithFlags graphInstantiateWithFlags = nullptr;
  using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);
  GraphLaunch graphLaunch = nullptr;
  using GraphExecDestroy = CUresult (*)(CUgraphExec);
  GraphExecDestroy graphExecDestroy = nullptr;
  using GraphDestroy = CUresult (*)(CUgraph);
  GraphDestroy graphDestroy = nullptr;
  PFN_cuDeviceGetGraphMemAttribute deviceGetGraphMemAttribute = nullptr;
  using DeviceGraphMemTrim = CUresult (*)(CUdevice);
  DeviceGraphMemTrim deviceGraphMemTrim = nullptr;

  // The name of the first function that could not be resolved, empty when all were.
  std::string missing;

  template <class Fn>
  void resolve(Fn& fn, const char* name) {
    fn = symbol<Fn>(library, name);
    if (fn == nullptr && missing.empty()) missing = name;
  }

  Driver() {
    library = open_first({std::getenv("GPUMEM_CUDA_LIBRARY"), "libcuda.so.1"});
    if (library == nullptr) {
      missing = "libcuda.so.1";
      return;
    }
    resolve(init, "cuInit");
    resolve(deviceGet, "cuDeviceGet");
    resolve(primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    resolve(primaryCtxGetState, "cuDevicePrimaryCtxGetState");
    resolve(ctxSetCurrent, "cuCtxSetCurrent");
    resolve(memAlloc, "cuMemAlloc_v2");
    resolve(memFree, "cuMemFree_v2");
    resolve(memGetAllocationGranularity, "cuMemGetAllocationGranularity");
    resolve(memCreate, "cuMemCreate");
    resolve(memAddressReserve, "cuMemAddressReserve");
    resolve(memAddressFree, "cuMemAddressFree");
    resolve(memMap, "cuMemMap");
    resolve(memSetAccess, "cuMemSetAccess");
    resolve(memRelease, "cuMemRelease");
    resolve(memUnmap, "cuMemUnmap");
    resolve(deviceGetMemPool, "cuDeviceGetMemPool");
    resolve(memPoolGetAttribute, "cuMemPoolGetAttribute");
    resolve(memPoolSetAttribute, "cuMemPoolSetAttribute");
    resolve(memPoolTrimTo, "cuMemPoolTrimTo");
    resolve(memAllocAsync, "cuMemAllocAsync");
    resolve(memFreeAsync, "cuMemFreeAsync");
    resolve(streamSynchronize, "cuStreamSynchronize");
    resolve(graphCreate, "cuGraphCreate");
    resolve(graphAddMemAllocNode, "cuGraphAddMemAllocNode");
    resolve(graphAddMemFreeNode, "cuGraphAddMemFreeNode");
    resolve(graphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    resolve(graphLaunch, "cuGraphLaunch");
    resolve(graphExecDestroy, "cuGraphExecDestroy");
    resolve(graphDestroy, "cuGraphDestroy");
    resolve(deviceGetGraphMemAttribute, "cuDeviceGetGraphMemAttribute");
    resolve(deviceGraphMemTrim, "cuDeviceGraphMemTrim");
  }
};

// The runtime calls that reach the driver (cudaError_t is an int; 0 is cudaSuccess).
struct Runtime {
  void* library = nullptr;
  std::string path;
  int (*setDevice)(int) = nullptr;
  int (*cudaMalloc)(void**, size_t) = nullptr;
  int (*cudaFree)(void*) = nullptr;
  int (*mallocAsync)(void**, size_t, CUstream) = nullptr;
  int (*freeAsync)(void*, CUstream) = nullptr;
  int (*streamSynchronize)(CUstream) = nullptr;

  Runtime() {
    for (const char* name : std::initializer_list<const char*>{
             std::getenv("REAL_GPU_CHECK_CUDART"), "libcudart.so.13", "libcudart.so.12"}) {
      if (name == nullptr || *name == '\0') continue;
      library = ::dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (library != nullptr) {
        path = name;
        break;
      }
    }
    setDevice = symbol<decltype(setDevice)>(library, "cudaSetDevice");
    cudaMalloc = symbol<decltype(cudaMalloc)>(library, "cudaMalloc");
    cudaFree = symbol<decltype(cudaFree)>(library, "cudaFree");
    mallocAsync = symbol<decltype(mallocAsync)>(library, "cudaMallocAsync");
    freeAsync = symbol<decltype(freeAsync)>(library, "cudaFreeAsync");
    streamSynchronize = symbol<decltype(streamSynchronize)>(library, "cudaStreamSynchronize");
  }
  bool usable() const {
    return setDevice != nullptr && cudaMalloc != nullptr && cudaFree != nullptr &&
           mallocAsync != nullptr && freeAsync != nullptr && streamSynchronize != nullptr;
  }
};

// The libraries of this process whose file name contains `part` ("libcupti"), from
// /proc/self/maps: what is loaded, whoever loaded it.
inline std::string mapped_library(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const auto base = path.rfind('/');
    if (path.find(part, base) != std::string::npos) return path;
  }
  return {};
}

}  // namespace real_gpu
