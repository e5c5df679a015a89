// gpumem's declarations of the CUDA driver API and CUPTI (src/driver/abi/cuda.hpp, cupti.hpp)
// against NVIDIA's cuda.h and CUPTI headers. gpumem's live in gpumem::abi, NVIDIA's in the global
// namespace. cuda.h is read as the driver itself reads it (__CUDA_API_VERSION_INTERNAL), which
// declares every exported symbol under its own name, legacy versions included, so that each
// symbol gpumem loads is checked against exactly that symbol's signature.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "compatible.hpp"
#include "coverage.hpp"
#include "cuda_functions.inc"
#include "driver/abi/cuda.hpp"
#include "driver/abi/cupti.hpp"

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_result.h>
#include <cupti_runtime_cbid.h>
#include <generated_cuda_meta.h>
#include <generated_cuda_runtime_api_meta.h>

namespace ours = gpumem::abi;
using gpumem::abi_test::abi_compatible;

// --- the structs and opaque handles, and NVIDIA's name for each ------------------------------
// clang-format off
#define GPUMEM_CUDA_TYPES(X) \
  X(CUctx_st)                               \
  X(CUstream_st)                            \
  X(CUmemPoolHandle_st)                     \
  X(CUmod_st)                               \
  X(CUevent_st)                             \
  X(CUgraph_st)                             \
  X(CUgraphExec_st)                         \
  X(CUgraphNode_st) \
  X(CUfunc_st) \
    X(CUmemLocation) \
  X(CUmemAccessDesc) \
  X(CUmemPoolProps) \
  X(CUDA_MEM_ALLOC_NODE_PARAMS) \
  X(cuCtxCreate_v2_params) \
  X(cuCtxCreate_v3_params) \
  X(cuCtxCreate_v4_params) \
  X(cuCtxDestroy_v2_params) \
  X(cuDevicePrimaryCtxRetain_params) \
  X(cuDevicePrimaryCtxRelease_v2_params) \
  X(cuDevicePrimaryCtxReset_v2_params) \
  X(cuModuleLoad_params) \
  X(cuModuleLoadData_params) \
  X(cuModuleLoadDataEx_params) \
  X(cuModuleUnload_params) \
  X(cuModuleGetFunction_params) \
  X(cuMemGetAllocationGranularity_params) \
  X(cuMemAddressReserve_params) \
  X(cuMemAddressFree_params) \
  X(cuMemSetAccess_params) \
  X(cuDeviceGetDefaultMemPool_params) \
  X(cuDeviceGetMemPool_params) \
  X(cuMemPoolCreate_params) \
  X(cuMemPoolGetAttribute_params) \
  X(cuStreamSynchronize_params) \
  X(cuEventSynchronize_params) \
  X(cuCtxSynchronize_v2_params) \
  X(cuGraphCreate_params) \
  X(cuGraphAddMemAllocNode_params) \
  X(cuGraphAddMemFreeNode_params) \
  X(cuGraphInstantiateWithFlags_params) \
  X(cuGraphUpload_params) \
  X(cuGraphExecDestroy_params) \
  X(cuGraphDestroy_params) \
  X(cuDeviceGetGraphMemAttribute_params) \
  X(cuMemPrefetchAsync_v2_params) \
  X(CUpti_Subscriber_st)                    \
  X(CUuuid)                                 \
  X(CUmemAllocationProp)                    \
  X(CUpti_CallbackData)                     \
  X(CUpti_ResourceData)                     \
  X(CUpti_ModuleResourceData)               \
  X(cuMemAlloc_v2_params)                   \
  X(cuMemFree_v2_params)                    \
  X(cuMemAllocManaged_params)               \
  X(cuMemAllocAsync_params)                 \
  X(cuMemAllocFromPoolAsync_params)         \
  X(cuMemFreeAsync_params)                  \
  X(cuMemCreate_params)                     \
  X(cuMemRelease_params)                    \
  X(cuMemMap_params)                        \
  X(cuMemUnmap_params)                      \
  X(cuMemRetainAllocationHandle_params)     \
  X(cuMemImportFromShareableHandle_params)  \
  X(cuMemPoolTrimTo_params)                 \
  X(cuMemPoolDestroy_params)                \
  X(cuDeviceSetMemPool_params)              \
  X(cuDeviceGraphMemTrim_params)            \
  X(cudaMalloc_v3020_params)                \
  X(cudaFree_v3020_params)                  \
  X(cuMemAllocPitch_v2_params)
// clang-format on
#define GPUMEM_COUNTERPART(T)                     \
  template <>                                     \
  struct gpumem::abi_test::counterpart<ours::T> { \
    using type = ::T;                             \
  };
GPUMEM_CUDA_TYPES(GPUMEM_COUNTERPART)

// --- scalar types --------------------------------------------------------------------------
static_assert(abi_compatible<ours::CUresult, ::CUresult>);
static_assert(abi_compatible<ours::CUdevice, ::CUdevice>);
static_assert(abi_compatible<ours::CUdeviceptr, ::CUdeviceptr>);
static_assert(abi_compatible<ours::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>);
static_assert(abi_compatible<ours::CUcontext, ::CUcontext>);
static_assert(abi_compatible<ours::CUstream, ::CUstream>);
static_assert(abi_compatible<ours::CUmemoryPool, ::CUmemoryPool>);
static_assert(abi_compatible<ours::CUmodule, ::CUmodule>);
static_assert(abi_compatible<ours::CUevent, ::CUevent>);
static_assert(abi_compatible<ours::CUgraph, ::CUgraph>);
static_assert(abi_compatible<ours::CUgraphExec, ::CUgraphExec>);
static_assert(abi_compatible<ours::CUgraphNode, ::CUgraphNode>);
static_assert(abi_compatible<ours::CUfunction, ::CUfunction>);
static_assert(abi_compatible<ours::CUptiResult, ::CUptiResult>);
static_assert(abi_compatible<ours::CUpti_CallbackDomain, ::CUpti_CallbackDomain>);
static_assert(abi_compatible<ours::CUpti_CallbackId, ::CUpti_CallbackId>);
static_assert(abi_compatible<ours::CUpti_SubscriberHandle, ::CUpti_SubscriberHandle>);
static_assert(abi_compatible<ours::CUpti_CallbackFunc, ::CUpti_CallbackFunc>);

// --- struct layouts: size, and each field's offset, size and type --------------------------
#define GPUMEM_LAYOUT(S, f)                                                      \
  static_assert(offsetof(ours::S, f) == offsetof(::S, f), #S "::" #f " offset"); \
  static_assert(sizeof(ours::S::f) == sizeof(::S::f), #S "::" #f " size");
#define GPUMEM_FIELD(S, f) \
  GPUMEM_LAYOUT(S, f)      \
  static_assert(abi_compatible<decltype(ours::S::f), decltype(::S::f)>, #S "::" #f " type");
#define GPUMEM_SIZE(S) static_assert(sizeof(ours::S) == sizeof(::S), #S " size");

GPUMEM_SIZE(CUuuid)
GPUMEM_FIELD(CUuuid, bytes)

// gpumem flattens CUmemAllocationProp::location into two fields.
GPUMEM_SIZE(CUmemAllocationProp)
GPUMEM_FIELD(CUmemAllocationProp, type)
GPUMEM_FIELD(CUmemAllocationProp, requestedHandleTypes)
static_assert(offsetof(ours::CUmemAllocationProp, locationType) ==
              offsetof(::CUmemAllocationProp, location) + offsetof(::CUmemLocation, type));
static_assert(offsetof(ours::CUmemAllocationProp, locationId) ==
              offsetof(::CUmemAllocationProp, location) + offsetof(::CUmemLocation, id));
static_assert(abi_compatible<decltype(ours::CUmemAllocationProp::locationType),
                             decltype(::CUmemLocation::type)>);
static_assert(
    abi_compatible<decltype(ours::CUmemAllocationProp::locationId), decltype(::CUmemLocation::id)>);
GPUMEM_FIELD(CUmemAllocationProp, win32HandleMetaData)
GPUMEM_LAYOUT(CUmemAllocationProp, allocFlags)

GPUMEM_SIZE(CUpti_CallbackData)
GPUMEM_FIELD(CUpti_CallbackData, callbackSite)
GPUMEM_FIELD(CUpti_CallbackData, functionName)
GPUMEM_FIELD(CUpti_CallbackData, functionParams)
GPUMEM_FIELD(CUpti_CallbackData, functionReturnValue)
GPUMEM_FIELD(CUpti_CallbackData, symbolName)
GPUMEM_FIELD(CUpti_CallbackData, context)
GPUMEM_FIELD(CUpti_CallbackData, contextUid)
GPUMEM_FIELD(CUpti_CallbackData, correlationData)
GPUMEM_FIELD(CUpti_CallbackData, correlationId)

GPUMEM_SIZE(CUpti_ResourceData)
GPUMEM_FIELD(CUpti_ResourceData, context)
GPUMEM_LAYOUT(CUpti_ResourceData, resourceHandle)  // a union of {CUstream} in cupti_callbacks.h
GPUMEM_FIELD(CUpti_ResourceData, resourceDescriptor)

GPUMEM_SIZE(CUpti_ModuleResourceData)
GPUMEM_FIELD(CUpti_ModuleResourceData, moduleId)
GPUMEM_FIELD(CUpti_ModuleResourceData, cubinSize)
GPUMEM_FIELD(CUpti_ModuleResourceData, pCubin)

GPUMEM_SIZE(cuMemAlloc_v2_params)
GPUMEM_FIELD(cuMemAlloc_v2_params, dptr)
GPUMEM_FIELD(cuMemAlloc_v2_params, bytesize)
GPUMEM_SIZE(cuMemAllocPitch_v2_params)
GPUMEM_FIELD(cuMemAllocPitch_v2_params, dptr)
GPUMEM_FIELD(cuMemAllocPitch_v2_params, pPitch)
GPUMEM_FIELD(cuMemAllocPitch_v2_params, WidthInBytes)
GPUMEM_FIELD(cuMemAllocPitch_v2_params, Height)
GPUMEM_FIELD(cuMemAllocPitch_v2_params, ElementSizeBytes)
GPUMEM_SIZE(cuMemFree_v2_params)
GPUMEM_FIELD(cuMemFree_v2_params, dptr)
GPUMEM_SIZE(cuMemAllocManaged_params)
GPUMEM_FIELD(cuMemAllocManaged_params, dptr)
GPUMEM_FIELD(cuMemAllocManaged_params, bytesize)
GPUMEM_FIELD(cuMemAllocManaged_params, flags)
GPUMEM_SIZE(cuMemAllocAsync_params)
GPUMEM_FIELD(cuMemAllocAsync_params, dptr)
GPUMEM_FIELD(cuMemAllocAsync_params, bytesize)
GPUMEM_FIELD(cuMemAllocAsync_params, hStream)
GPUMEM_SIZE(cuMemAllocFromPoolAsync_params)
GPUMEM_FIELD(cuMemAllocFromPoolAsync_params, dptr)
GPUMEM_FIELD(cuMemAllocFromPoolAsync_params, bytesize)
GPUMEM_FIELD(cuMemAllocFromPoolAsync_params, pool)
GPUMEM_FIELD(cuMemAllocFromPoolAsync_params, hStream)
GPUMEM_SIZE(cuMemFreeAsync_params)
GPUMEM_FIELD(cuMemFreeAsync_params, dptr)
GPUMEM_FIELD(cuMemFreeAsync_params, hStream)
GPUMEM_SIZE(cuMemCreate_params)
GPUMEM_FIELD(cuMemCreate_params, handle)
GPUMEM_FIELD(cuMemCreate_params, size)
GPUMEM_FIELD(cuMemCreate_params, prop)
GPUMEM_FIELD(cuMemCreate_params, flags)
GPUMEM_SIZE(cuMemRelease_params)
GPUMEM_FIELD(cuMemRelease_params, handle)
GPUMEM_SIZE(cuMemMap_params)
GPUMEM_FIELD(cuMemMap_params, ptr)
GPUMEM_FIELD(cuMemMap_params, size)
GPUMEM_FIELD(cuMemMap_params, offset)
GPUMEM_FIELD(cuMemMap_params, handle)
GPUMEM_FIELD(cuMemMap_params, flags)
GPUMEM_SIZE(cuMemUnmap_params)
GPUMEM_FIELD(cuMemUnmap_params, ptr)
GPUMEM_FIELD(cuMemUnmap_params, size)
GPUMEM_SIZE(cuMemRetainAllocationHandle_params)
GPUMEM_FIELD(cuMemRetainAllocationHandle_params, handle)
GPUMEM_FIELD(cuMemRetainAllocationHandle_params, addr)
GPUMEM_SIZE(cuMemImportFromShareableHandle_params)
GPUMEM_FIELD(cuMemImportFromShareableHandle_params, handle)
GPUMEM_FIELD(cuMemImportFromShareableHandle_params, osHandle)
GPUMEM_FIELD(cuMemImportFromShareableHandle_params, shHandleType)
GPUMEM_SIZE(cuMemPoolTrimTo_params)
GPUMEM_FIELD(cuMemPoolTrimTo_params, pool)
GPUMEM_FIELD(cuMemPoolTrimTo_params, minBytesToKeep)
GPUMEM_SIZE(cuMemPoolDestroy_params)
GPUMEM_FIELD(cuMemPoolDestroy_params, pool)
GPUMEM_SIZE(cuDeviceSetMemPool_params)
GPUMEM_FIELD(cuDeviceSetMemPool_params, dev)
GPUMEM_FIELD(cuDeviceSetMemPool_params, pool)
GPUMEM_SIZE(cuDeviceGraphMemTrim_params)
GPUMEM_FIELD(cuDeviceGraphMemTrim_params, device)
GPUMEM_SIZE(CUmemLocation)
GPUMEM_FIELD(CUmemLocation, type)
GPUMEM_FIELD(CUmemLocation, id)
GPUMEM_SIZE(CUmemAccessDesc)
GPUMEM_FIELD(CUmemAccessDesc, location)
GPUMEM_FIELD(CUmemAccessDesc, flags)
GPUMEM_SIZE(CUmemPoolProps)
GPUMEM_FIELD(CUmemPoolProps, allocType)
GPUMEM_FIELD(CUmemPoolProps, handleTypes)
GPUMEM_FIELD(CUmemPoolProps, location)
GPUMEM_FIELD(CUmemPoolProps, win32SecurityAttributes)
GPUMEM_FIELD(CUmemPoolProps, maxSize)
GPUMEM_FIELD(CUmemPoolProps, usage)
GPUMEM_FIELD(CUmemPoolProps, reserved)
GPUMEM_SIZE(CUDA_MEM_ALLOC_NODE_PARAMS)
GPUMEM_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, poolProps)
GPUMEM_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs)
GPUMEM_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescCount)
GPUMEM_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize)
GPUMEM_FIELD(CUDA_MEM_ALLOC_NODE_PARAMS, dptr)
GPUMEM_SIZE(cuCtxCreate_v2_params)
GPUMEM_FIELD(cuCtxCreate_v2_params, pctx)
GPUMEM_FIELD(cuCtxCreate_v2_params, flags)
GPUMEM_FIELD(cuCtxCreate_v2_params, dev)
GPUMEM_SIZE(cuCtxCreate_v3_params)
GPUMEM_FIELD(cuCtxCreate_v3_params, pctx)
GPUMEM_LAYOUT(cuCtxCreate_v3_params, paramsArray)  // CUexecAffinityParam* in cuda.h
GPUMEM_FIELD(cuCtxCreate_v3_params, numParams)
GPUMEM_FIELD(cuCtxCreate_v3_params, flags)
GPUMEM_FIELD(cuCtxCreate_v3_params, dev)
GPUMEM_SIZE(cuCtxCreate_v4_params)
GPUMEM_FIELD(cuCtxCreate_v4_params, pctx)
GPUMEM_LAYOUT(cuCtxCreate_v4_params, ctxCreateParams)  // CUctxCreateParams* in cuda.h
GPUMEM_FIELD(cuCtxCreate_v4_params, flags)
GPUMEM_FIELD(cuCtxCreate_v4_params, dev)
GPUMEM_SIZE(cuCtxDestroy_v2_params)
GPUMEM_FIELD(cuCtxDestroy_v2_params, ctx)
GPUMEM_SIZE(cuDevicePrimaryCtxRetain_params)
GPUMEM_FIELD(cuDevicePrimaryCtxRetain_params, pctx)
GPUMEM_FIELD(cuDevicePrimaryCtxRetain_params, dev)
GPUMEM_SIZE(cuDevicePrimaryCtxRelease_v2_params)
GPUMEM_FIELD(cuDevicePrimaryCtxRelease_v2_params, dev)
GPUMEM_SIZE(cuDevicePrimaryCtxReset_v2_params)
GPUMEM_FIELD(cuDevicePrimaryCtxReset_v2_params, dev)
GPUMEM_SIZE(cuModuleLoad_params)
GPUMEM_FIELD(cuModuleLoad_params, module)
GPUMEM_FIELD(cuModuleLoad_params, fname)
GPUMEM_SIZE(cuModuleLoadData_params)
GPUMEM_FIELD(cuModuleLoadData_params, module)
GPUMEM_FIELD(cuModuleLoadData_params, image)
GPUMEM_SIZE(cuModuleLoadDataEx_params)
GPUMEM_FIELD(cuModuleLoadDataEx_params, module)
GPUMEM_FIELD(cuModuleLoadDataEx_params, image)
GPUMEM_FIELD(cuModuleLoadDataEx_params, numOptions)
GPUMEM_LAYOUT(cuModuleLoadDataEx_params, options)  // CUjit_option* in cuda.h
GPUMEM_FIELD(cuModuleLoadDataEx_params, optionValues)
GPUMEM_SIZE(cuModuleUnload_params)
GPUMEM_FIELD(cuModuleUnload_params, hmod)
GPUMEM_SIZE(cuModuleGetFunction_params)
GPUMEM_FIELD(cuModuleGetFunction_params, hfunc)
GPUMEM_FIELD(cuModuleGetFunction_params, hmod)
GPUMEM_FIELD(cuModuleGetFunction_params, name)
GPUMEM_SIZE(cuMemGetAllocationGranularity_params)
GPUMEM_FIELD(cuMemGetAllocationGranularity_params, granularity)
GPUMEM_FIELD(cuMemGetAllocationGranularity_params, prop)
GPUMEM_FIELD(cuMemGetAllocationGranularity_params, option)
GPUMEM_SIZE(cuMemAddressReserve_params)
GPUMEM_FIELD(cuMemAddressReserve_params, ptr)
GPUMEM_FIELD(cuMemAddressReserve_params, size)
GPUMEM_FIELD(cuMemAddressReserve_params, alignment)
GPUMEM_FIELD(cuMemAddressReserve_params, addr)
GPUMEM_FIELD(cuMemAddressReserve_params, flags)
GPUMEM_SIZE(cuMemAddressFree_params)
GPUMEM_FIELD(cuMemAddressFree_params, ptr)
GPUMEM_FIELD(cuMemAddressFree_params, size)
GPUMEM_SIZE(cuMemSetAccess_params)
GPUMEM_FIELD(cuMemSetAccess_params, ptr)
GPUMEM_FIELD(cuMemSetAccess_params, size)
GPUMEM_FIELD(cuMemSetAccess_params, desc)
GPUMEM_FIELD(cuMemSetAccess_params, count)
GPUMEM_SIZE(cuDeviceGetDefaultMemPool_params)
GPUMEM_FIELD(cuDeviceGetDefaultMemPool_params, pool_out)
GPUMEM_FIELD(cuDeviceGetDefaultMemPool_params, dev)
GPUMEM_SIZE(cuDeviceGetMemPool_params)
GPUMEM_FIELD(cuDeviceGetMemPool_params, pool)
GPUMEM_FIELD(cuDeviceGetMemPool_params, dev)
GPUMEM_SIZE(cuMemPoolCreate_params)
GPUMEM_FIELD(cuMemPoolCreate_params, pool)
GPUMEM_FIELD(cuMemPoolCreate_params, poolProps)
GPUMEM_SIZE(cuMemPoolGetAttribute_params)
GPUMEM_FIELD(cuMemPoolGetAttribute_params, pool)
GPUMEM_FIELD(cuMemPoolGetAttribute_params, attr)
GPUMEM_FIELD(cuMemPoolGetAttribute_params, value)
GPUMEM_SIZE(cuStreamSynchronize_params)
GPUMEM_FIELD(cuStreamSynchronize_params, hStream)
GPUMEM_SIZE(cuEventSynchronize_params)
GPUMEM_FIELD(cuEventSynchronize_params, hEvent)
GPUMEM_SIZE(cuCtxSynchronize_v2_params)
GPUMEM_FIELD(cuCtxSynchronize_v2_params, ctx)
GPUMEM_SIZE(cuGraphCreate_params)
GPUMEM_FIELD(cuGraphCreate_params, phGraph)
GPUMEM_FIELD(cuGraphCreate_params, flags)
GPUMEM_SIZE(cuGraphAddMemAllocNode_params)
GPUMEM_FIELD(cuGraphAddMemAllocNode_params, phGraphNode)
GPUMEM_FIELD(cuGraphAddMemAllocNode_params, hGraph)
GPUMEM_FIELD(cuGraphAddMemAllocNode_params, dependencies)
GPUMEM_FIELD(cuGraphAddMemAllocNode_params, numDependencies)
GPUMEM_FIELD(cuGraphAddMemAllocNode_params, nodeParams)
GPUMEM_SIZE(cuGraphAddMemFreeNode_params)
GPUMEM_FIELD(cuGraphAddMemFreeNode_params, phGraphNode)
GPUMEM_FIELD(cuGraphAddMemFreeNode_params, hGraph)
GPUMEM_FIELD(cuGraphAddMemFreeNode_params, dependencies)
GPUMEM_FIELD(cuGraphAddMemFreeNode_params, numDependencies)
GPUMEM_FIELD(cuGraphAddMemFreeNode_params, dptr)
GPUMEM_SIZE(cuGraphInstantiateWithFlags_params)
GPUMEM_FIELD(cuGraphInstantiateWithFlags_params, phGraphExec)
GPUMEM_FIELD(cuGraphInstantiateWithFlags_params, hGraph)
GPUMEM_FIELD(cuGraphInstantiateWithFlags_params, flags)
GPUMEM_SIZE(cuGraphUpload_params)
GPUMEM_FIELD(cuGraphUpload_params, hGraph)
GPUMEM_FIELD(cuGraphUpload_params, hStream)
GPUMEM_SIZE(cuGraphExecDestroy_params)
GPUMEM_FIELD(cuGraphExecDestroy_params, hGraphExec)
GPUMEM_SIZE(cuGraphDestroy_params)
GPUMEM_FIELD(cuGraphDestroy_params, hGraph)
GPUMEM_SIZE(cuDeviceGetGraphMemAttribute_params)
GPUMEM_FIELD(cuDeviceGetGraphMemAttribute_params, device)
GPUMEM_FIELD(cuDeviceGetGraphMemAttribute_params, attr)
GPUMEM_FIELD(cuDeviceGetGraphMemAttribute_params, value)
GPUMEM_SIZE(cuMemPrefetchAsync_v2_params)
GPUMEM_FIELD(cuMemPrefetchAsync_v2_params, devPtr)
GPUMEM_FIELD(cuMemPrefetchAsync_v2_params, count)
GPUMEM_FIELD(cuMemPrefetchAsync_v2_params, location)
GPUMEM_FIELD(cuMemPrefetchAsync_v2_params, flags)
GPUMEM_FIELD(cuMemPrefetchAsync_v2_params, hStream)
// Aliases of the structs above, where NVIDIA's params have the same fields.
GPUMEM_SIZE(cuMemPoolSetAttribute_params)
GPUMEM_FIELD(cuMemPoolSetAttribute_params, pool)
GPUMEM_FIELD(cuMemPoolSetAttribute_params, attr)
GPUMEM_FIELD(cuMemPoolSetAttribute_params, value)
GPUMEM_SIZE(cuGraphLaunch_params)
GPUMEM_FIELD(cuGraphLaunch_params, hGraph)
GPUMEM_FIELD(cuGraphLaunch_params, hStream)
GPUMEM_SIZE(cuDeviceSetGraphMemAttribute_params)
GPUMEM_FIELD(cuDeviceSetGraphMemAttribute_params, device)
GPUMEM_FIELD(cuDeviceSetGraphMemAttribute_params, attr)
GPUMEM_FIELD(cuDeviceSetGraphMemAttribute_params, value)
GPUMEM_SIZE(cudaMalloc_v3020_params)
GPUMEM_FIELD(cudaMalloc_v3020_params, devPtr)
GPUMEM_FIELD(cudaMalloc_v3020_params, size)
GPUMEM_SIZE(cudaFree_v3020_params)
GPUMEM_FIELD(cudaFree_v3020_params, devPtr)

// --- enum values and callback ids -----------------------------------------------------------
// clang-format off
#define GPUMEM_CUDA_CONSTANTS(X) \
  X(CUDA_SUCCESS)                                                  \
  X(CUDA_ERROR_INVALID_VALUE)                                      \
  X(CUDA_ERROR_OUT_OF_MEMORY)                                      \
  X(CUDA_ERROR_NOT_INITIALIZED)                                    \
  X(CUDA_ERROR_DEINITIALIZED)                                      \
  X(CUDA_ERROR_STUB_LIBRARY)                                       \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)                         \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE)                                 \
  X(CUDA_ERROR_NO_DEVICE)                                          \
  X(CUDA_ERROR_INVALID_DEVICE)                                     \
  X(CUDA_ERROR_INVALID_CONTEXT)                                    \
  X(CUDA_ERROR_NOT_FOUND)                                          \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED)                               \
  X(CUDA_ERROR_NOT_PERMITTED)                                      \
  X(CUDA_ERROR_NOT_SUPPORTED)                                      \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)                             \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)                     \
  X(CUDA_ERROR_UNKNOWN)                                            \
  X(CU_MEM_LOCATION_TYPE_DEVICE)                                   \
  X(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)                             \
  X(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)                          \
  X(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)                             \
  X(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)                              \
  X(CU_MEMPOOL_ATTR_USED_MEM_HIGH)                                 \
  X(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)                            \
  X(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)                               \
  X(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)                        \
  X(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)                           \
  X(CUPTI_SUCCESS)                                                 \
  X(CUPTI_ERROR_INVALID_PARAMETER)                                 \
  X(CUPTI_ERROR_MAX_LIMIT_REACHED)                                 \
  X(CUPTI_ERROR_NOT_INITIALIZED)                                   \
  X(CUPTI_ERROR_NOT_SUPPORTED)                                     \
  X(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)                           \
  X(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)                \
  X(CUPTI_ERROR_UNKNOWN)                                           \
  X(CUPTI_CB_DOMAIN_DRIVER_API)                                    \
  X(CUPTI_CB_DOMAIN_RUNTIME_API)                                   \
  X(CUPTI_CB_DOMAIN_RESOURCE)                                      \
  X(CUPTI_API_ENTER)                                               \
  X(CUPTI_API_EXIT)                                                \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize)                      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc)                            \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemFree)                             \
  X(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize)                    \
  X(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize)                   \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2)                       \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2)                         \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2)                    \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2)                          \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged)                     \
  X(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz)              \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch)                         \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz)                    \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy)                    \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve)                   \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree)                      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemCreate)                           \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemRelease)                          \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemMap)                              \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap)                            \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle)        \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle)           \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2)                 \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphUpload)                         \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz)                    \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync)                       \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz)                  \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync)                        \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz)                   \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo)                       \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy)                      \
  X(CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool)                    \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync)               \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz)          \
  X(CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim)                  \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags)           \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams)          \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz)     \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2)                   \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)                     \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020)                \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020)                       \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000)              \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020)               \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020)          \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020)                 \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020)            \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020)       \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020)  \
  X(CUPTI_CBID_RESOURCE_CONTEXT_CREATED)                           \
  X(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)                  \
  X(CUPTI_CBID_RESOURCE_MODULE_LOADED)                             \
  X(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) \
  X(CUDA_ERROR_INVALID_IMAGE) \
  X(CUDA_ERROR_ALREADY_MAPPED) \
  X(CUDA_ERROR_NOT_MAPPED) \
  X(CUDA_ERROR_FILE_NOT_FOUND) \
  X(CUDA_ERROR_INVALID_HANDLE) \
  X(CU_MEM_LOCATION_TYPE_HOST) \
  X(CU_MEM_ALLOC_GRANULARITY_MINIMUM) \
  X(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) \
  X(CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES) \
  X(CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC) \
  X(CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) \
  X(CUPTI_DRIVER_TRACE_CBID_cuModuleLoad) \
  X(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData) \
  X(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx) \
  X(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload) \
  X(CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction) \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRetain) \
  X(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync) \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphCreate) \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemGetAllocationGranularity) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPoolSetAttribute) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPoolGetAttribute) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetDefaultMemPool) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetMemPool) \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode) \
  X(CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemFreeNode) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetGraphMemAttribute) \
  X(CUPTI_DRIVER_TRACE_CBID_cuDeviceSetGraphMemAttribute) \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2) \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4)
// clang-format on
#define GPUMEM_CONSTANT(name) \
  static_assert(static_cast<long long>(ours::name) == static_cast<long long>(::name), #name);
GPUMEM_CUDA_CONSTANTS(GPUMEM_CONSTANT)

// The error names gpumem prints are the enumerators' own.
constexpr bool named_as(std::string_view name, const char* printed) {
  return !name.starts_with("CUDA_") || (printed != nullptr && name == printed);
}
#define GPUMEM_ERROR_NAME(name) \
  static_assert(named_as(#name, ours::cuda_result_name(ours::name)), #name " name");
GPUMEM_CUDA_CONSTANTS(GPUMEM_ERROR_NAME)

// --- function signatures, each against the symbol it is loaded as ---------------------------
#define GPUMEM_SIGNATURE(pfn, api, symbol)                      \
  static_assert(abi_compatible<ours::pfn, decltype(&::symbol)>, \
                "gpumem::abi::" #pfn " is not the signature of " #symbol);
GPUMEM_CUDA_FUNCTIONS(GPUMEM_SIGNATURE)

namespace gpumem::abi_test {
extern const std::pair<std::string_view, std::string_view> kCurrentCuda[];
namespace {
#include "cuda_inventory.inc"

#define GPUMEM_NAME(name) #name,
#define GPUMEM_FUNCTION(pfn, api, symbol) Function{#pfn, #api, #symbol},
#define GPUMEM_PFN(pfn, api, symbol) #pfn,
constexpr std::string_view kCheckedConstants[] = {GPUMEM_CUDA_CONSTANTS(GPUMEM_NAME)};
constexpr std::string_view kCheckedStructs[] = {GPUMEM_CUDA_TYPES(GPUMEM_NAME)};
constexpr std::string_view kCheckedFunctions[] = {GPUMEM_CUDA_FUNCTIONS(GPUMEM_PFN)};
constexpr Function kFunctions[] = {GPUMEM_CUDA_FUNCTIONS(GPUMEM_FUNCTION)};
}  // namespace
}  // namespace gpumem::abi_test

int main() {
  using namespace gpumem::abi_test;
  Coverage coverage("abi_cuda_conformance");
  coverage.declared("function type", kDeclaredFunctions, kCheckedFunctions);
  coverage.declared("constant", kDeclaredConstants, kCheckedConstants);
  coverage.declared("struct", kDeclaredStructs, kCheckedStructs);
  std::size_t current = 0;
  while (!kCurrentCuda[current].first.empty()) ++current;
  coverage.loaded(kLoadedSymbols, kFunctions, {kCurrentCuda, current});
  return coverage.finish("cuda.h " + std::to_string(CUDA_VERSION) + " and its CUPTI headers");
}
