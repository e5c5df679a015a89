// The subset of the CUDA driver API (libcuda.so.1) that gpumem uses, declared by hand so that
// nothing of NVIDIA's is needed to build. Symbol names in comments are what dlsym must ask for:
// cuda.h #defines the plain names to these versioned ones.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpumem::abi {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUmemoryPool = struct CUmemPoolHandle_st*;
using CUmodule = struct CUmod_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUfunction = struct CUfunc_st*;
using CUdeviceptr = unsigned long long;
using CUmemGenericAllocationHandle = unsigned long long;
struct CUuuid {
  char bytes[16];
};

enum : int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_ALREADY_MAPPED = 208,
  CUDA_ERROR_NOT_MAPPED = 211,
  CUDA_ERROR_FILE_NOT_FOUND = 301,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
  CUDA_ERROR_UNKNOWN = 999,
};

// The enumerator's name (what cuGetErrorName answers), nullptr for a code not declared here.
constexpr const char* cuda_result_name(CUresult code) noexcept {
  switch (code) {
    case CUDA_SUCCESS:
      return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED:
      return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY:
      return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
      return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
      return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case CUDA_ERROR_NO_DEVICE:
      return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE:
      return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE:
      return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_ALREADY_MAPPED:
      return "CUDA_ERROR_ALREADY_MAPPED";
    case CUDA_ERROR_NOT_MAPPED:
      return "CUDA_ERROR_NOT_MAPPED";
    case CUDA_ERROR_FILE_NOT_FOUND:
      return "CUDA_ERROR_FILE_NOT_FOUND";
    case CUDA_ERROR_INVALID_HANDLE:
      return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND:
      return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return "CUDA_ERROR_CONTEXT_IS_DESTROYED";
    case CUDA_ERROR_NOT_PERMITTED:
      return "CUDA_ERROR_NOT_PERMITTED";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case CUDA_ERROR_UNKNOWN:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return nullptr;
  }
}

// CUmemAllocationProp, as far as gpumem reads it: location.type at offset 8, location.id at 12.
enum : int { CU_MEM_LOCATION_TYPE_DEVICE = 1 };
struct CUmemAllocationProp {
  int type;  // CU_MEM_ALLOCATION_TYPE_PINNED = 1
  int requestedHandleTypes;
  int locationType;  // CU_MEM_LOCATION_TYPE_*
  int locationId;    // device ordinal for DEVICE
  void* win32HandleMetaData;
  unsigned char allocFlags[8];
};
static_assert(offsetof(CUmemAllocationProp, locationType) == 8);
static_assert(offsetof(CUmemAllocationProp, locationId) == 12);

// CUmemLocation / CUmemAccessDesc (cuMemSetAccess, cuMemPrefetchAsync_v2).
enum : int { CU_MEM_LOCATION_TYPE_HOST = 2 };
struct CUmemLocation {
  int type;  // CU_MEM_LOCATION_TYPE_*
  int id;
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;  // CU_MEM_ACCESS_FLAGS_PROT_* (3: read-write)
};
static_assert(sizeof(CUmemAccessDesc) == 12);
// CUmemAllocationGranularity_flags.
enum : int { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1 };

// CUmemPoolProps (cuMemPoolCreate, and inside CUDA_MEM_ALLOC_NODE_PARAMS).
struct CUmemPoolProps {
  int allocType;  // CU_MEM_ALLOCATION_TYPE_PINNED = 1
  int handleTypes;
  CUmemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;  // 0: a system-dependent default
  unsigned short usage;
  unsigned char reserved[54];
};
static_assert(offsetof(CUmemPoolProps, location) == 8);
static_assert(offsetof(CUmemPoolProps, maxSize) == 24);
static_assert(sizeof(CUmemPoolProps) == 88);

// CUDA_MEM_ALLOC_NODE_PARAMS_v1 (cuGraphAddMemAllocNode): dptr is written by the driver.
struct CUDA_MEM_ALLOC_NODE_PARAMS {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc* accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
};
static_assert(offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize) == 104);
static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) == 120);

// CUmemPool_attribute: what a stream-ordered pool holds (cuuint64_t values; REUSE_* take int).
enum : int {
  CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
  CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
  CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
  CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
  CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8,
};
// CUgraphMem_attribute: the device's graph-memory pool (cuDeviceGetGraphMemAttribute, cuuint64_t).
enum : int {
  CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT = 0,
  CU_GRAPH_MEM_ATTR_USED_MEM_HIGH = 1,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT = 2,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH = 3,
};

using PFN_cuInit = CUresult (*)(unsigned flags);                               // cuInit
using PFN_cuDriverGetVersion = CUresult (*)(int* version);                     // cuDriverGetVersion
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** text);  // cuGetErrorString
using PFN_cuDeviceGetCount = CUresult (*)(int* count);                         // cuDeviceGetCount
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);           // cuDeviceGet
using PFN_cuDeviceGetName = CUresult (*)(char* name, int length, CUdevice dev);  // cuDeviceGetName
using PFN_cuDeviceGetUuid = CUresult (*)(CUuuid* uuid,
                                         CUdevice dev);  // cuDeviceGetUuid_v2 | cuDeviceGetUuid
using PFN_cuDeviceGetPCIBusId = CUresult (*)(char* bus_id, int length, CUdevice dev);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* ctx, CUdevice dev);
using PFN_cuDevicePrimaryCtxRelease = CUresult (*)(CUdevice dev);  // cuDevicePrimaryCtxRelease_v2
using PFN_cuDevicePrimaryCtxGetState = CUresult (*)(CUdevice dev, unsigned* flags, int* active);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuCtxGetCurrent = CUresult (*)(CUcontext* ctx);
using PFN_cuCtxGetDevice = CUresult (*)(CUdevice* device);
using PFN_cuCtxGetDeviceOf = CUresult (*)(CUdevice* device, CUcontext ctx);  // cuCtxGetDevice_v2
using PFN_cuMemGetInfo = CUresult (*)(size_t* free, size_t* total);          // cuMemGetInfo_v2
using PFN_cuMemAlloc = CUresult (*)(CUdeviceptr* ptr, size_t bytes);         // cuMemAlloc_v2
using PFN_cuMemFree = CUresult (*)(CUdeviceptr ptr);                         // cuMemFree_v2
using PFN_cuMemGetAddressRange = CUresult (*)(CUdeviceptr* base, size_t* size,
                                              CUdeviceptr ptr);  // cuMemGetAddressRange_v2
using PFN_cuMemAllocPitch = CUresult (*)(CUdeviceptr* ptr, size_t* pitch, size_t width,
                                         size_t height,
                                         unsigned element_bytes);  // cuMemAllocPitch_v2
using PFN_cuMemAllocManaged = CUresult (*)(CUdeviceptr* ptr, size_t bytes, unsigned flags);
using PFN_cuMemAllocAsync = CUresult (*)(CUdeviceptr* ptr, size_t bytes, CUstream stream);
using PFN_cuMemAllocFromPoolAsync = CUresult (*)(CUdeviceptr* ptr, size_t bytes, CUmemoryPool pool,
                                                 CUstream stream);
using PFN_cuMemFreeAsync = CUresult (*)(CUdeviceptr ptr, CUstream stream);
using PFN_cuMemCreate = CUresult (*)(CUmemGenericAllocationHandle* handle, size_t bytes,
                                     const CUmemAllocationProp* prop, unsigned long long flags);
using PFN_cuMemRelease = CUresult (*)(CUmemGenericAllocationHandle handle);
using PFN_cuMemMap = CUresult (*)(CUdeviceptr ptr, size_t size, size_t offset,
                                  CUmemGenericAllocationHandle handle, unsigned long long flags);
using PFN_cuMemUnmap = CUresult (*)(CUdeviceptr ptr, size_t size);
using PFN_cuMemRetainAllocationHandle = CUresult (*)(CUmemGenericAllocationHandle* handle,
                                                     void* addr);
using PFN_cuDeviceGetMemPool = CUresult (*)(CUmemoryPool* pool, CUdevice dev);
using PFN_cuMemPoolGetAttribute = CUresult (*)(CUmemoryPool pool, int attr, void* value);
using PFN_cuMemPoolTrimTo = CUresult (*)(CUmemoryPool pool, size_t min_bytes_to_keep);
using PFN_cuDeviceGetGraphMemAttribute = CUresult (*)(CUdevice device, int attr, void* value);
using PFN_cuCtxPushCurrent = CUresult (*)(CUcontext ctx);  // cuCtxPushCurrent_v2
using PFN_cuCtxPopCurrent = CUresult (*)(CUcontext* ctx);  // cuCtxPopCurrent_v2

}  // namespace gpumem::abi
