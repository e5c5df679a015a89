// The subset of CUPTI's callback API that gpumem uses (cupti_callbacks.h, cupti_driver_cbid.h,
// generated_cuda_meta.h of CUDA 13.0), declared by hand. Only one subscriber may exist per
// process, which is why subscribing can fail with MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39).
#pragma once

#include <cstddef>
#include <cstdint>

#include "driver/abi/cuda.hpp"

namespace gpumem::abi {

using CUptiResult = int;
using CUpti_CallbackDomain = int;
using CUpti_CallbackId = std::uint32_t;
using CUpti_SubscriberHandle = struct CUpti_Subscriber_st*;

enum : int {
  CUPTI_SUCCESS = 0,
  CUPTI_ERROR_INVALID_PARAMETER = 1,
  CUPTI_ERROR_MAX_LIMIT_REACHED = 12,
  CUPTI_ERROR_NOT_INITIALIZED = 15,
  CUPTI_ERROR_NOT_SUPPORTED = 27,
  CUPTI_ERROR_INSUFFICIENT_PRIVILEGES = 35,
  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
  CUPTI_ERROR_UNKNOWN = 999,
};
enum : int {
  CUPTI_CB_DOMAIN_DRIVER_API = 1,
  CUPTI_CB_DOMAIN_RUNTIME_API = 2,
  CUPTI_CB_DOMAIN_RESOURCE = 3,
};
enum : int { CUPTI_API_ENTER = 0, CUPTI_API_EXIT = 1 };

enum : CUpti_CallbackId {
  CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize = 17,
  CUPTI_DRIVER_TRACE_CBID_cuModuleLoad = 18,
  CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData = 19,
  CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx = 20,
  CUPTI_DRIVER_TRACE_CBID_cuModuleUnload = 22,
  CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction = 23,
  CUPTI_DRIVER_TRACE_CBID_cuMemAlloc = 29,
  CUPTI_DRIVER_TRACE_CBID_cuMemFree = 33,
  CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize = 121,
  CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize = 126,
  CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v2 = 235,
  CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2 = 242,
  CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 = 243,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2 = 244,
  CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2 = 245,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel = 307,
  CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2 = 322,
  CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2 = 323,
  CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2 = 324,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged = 371,
  CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRetain = 386,
  CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz = 440,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz = 442,
  CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync = 467,
  CUPTI_DRIVER_TRACE_CBID_cuGraphCreate = 501,
  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch = 514,
  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz = 515,
  CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy = 516,
  CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy = 517,
  CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2 = 544,
  CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2 = 545,
  CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve = 547,
  CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree = 548,
  CUPTI_DRIVER_TRACE_CBID_cuMemCreate = 549,
  CUPTI_DRIVER_TRACE_CBID_cuMemRelease = 550,
  CUPTI_DRIVER_TRACE_CBID_cuMemMap = 551,
  CUPTI_DRIVER_TRACE_CBID_cuMemUnmap = 552,
  CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess = 553,
  CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle = 555,
  CUPTI_DRIVER_TRACE_CBID_cuMemGetAllocationGranularity = 556,
  CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle = 565,
  CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2 = 578,
  CUPTI_DRIVER_TRACE_CBID_cuGraphUpload = 580,
  CUPTI_DRIVER_TRACE_CBID_cuGraphUpload_ptsz = 581,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync = 598,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz = 599,
  CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync = 600,
  CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz = 601,
  CUPTI_DRIVER_TRACE_CBID_cuMemPoolTrimTo = 602,
  CUPTI_DRIVER_TRACE_CBID_cuMemPoolSetAttribute = 603,
  CUPTI_DRIVER_TRACE_CBID_cuMemPoolGetAttribute = 604,
  CUPTI_DRIVER_TRACE_CBID_cuDeviceGetDefaultMemPool = 606,
  CUPTI_DRIVER_TRACE_CBID_cuMemPoolCreate = 607,
  CUPTI_DRIVER_TRACE_CBID_cuMemPoolDestroy = 608,
  CUPTI_DRIVER_TRACE_CBID_cuDeviceSetMemPool = 609,
  CUPTI_DRIVER_TRACE_CBID_cuDeviceGetMemPool = 610,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync = 611,
  CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz = 612,
  CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode = 638,
  CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemFreeNode = 639,
  CUPTI_DRIVER_TRACE_CBID_cuDeviceGraphMemTrim = 640,
  CUPTI_DRIVER_TRACE_CBID_cuDeviceGetGraphMemAttribute = 641,
  CUPTI_DRIVER_TRACE_CBID_cuDeviceSetGraphMemAttribute = 642,
  CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags = 643,
  CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v3 = 645,
  CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams = 656,
  CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz = 657,
  CUPTI_DRIVER_TRACE_CBID_cuMemPrefetchAsync_v2 = 716,
  CUPTI_DRIVER_TRACE_CBID_cuCtxCreate_v4 = 757,
  CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2 = 800,
};
enum : CUpti_CallbackId {
  CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020 = 20,
  CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020 = 21,
  CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020 = 22,
  CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000 = 206,
  CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020 = 373,
  CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020 = 374,
  CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020 = 375,
  CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020 = 376,
  CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020 = 391,
  CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020 = 392,
};
// CUpti_CallbackIdResource: the resource domain's events (no ENTER/EXIT: each fires once).
enum : CUpti_CallbackId {
  CUPTI_CBID_RESOURCE_CONTEXT_CREATED = 1,
  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING = 2,
  CUPTI_CBID_RESOURCE_MODULE_LOADED = 6,
  CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING = 7,
};

struct CUpti_CallbackData {
  int callbackSite;  // CUPTI_API_ENTER | CUPTI_API_EXIT
  const char* functionName;
  const void* functionParams;  // the <function>_params struct below
  void* functionReturnValue;   // CUresult* (driver) or cudaError_t* (runtime); valid at EXIT
  const char* symbolName;
  CUcontext context;
  std::uint32_t contextUid;
  std::uint64_t* correlationData;  // shared between the ENTER and EXIT of one call
  std::uint32_t correlationId;
};
static_assert(sizeof(CUpti_CallbackData) == 72);

// cbdata of the resource domain (CUpti_ResourceData).
struct CUpti_ResourceData {
  CUcontext context;         // the context created or destroyed, or that holds the module or stream
  void* resourceHandle;      // a union of {CUstream stream}
  void* resourceDescriptor;  // CUpti_ModuleResourceData* for the module events
};
static_assert(sizeof(CUpti_ResourceData) == 24);
struct CUpti_ModuleResourceData {
  std::uint32_t moduleId;
  size_t cubinSize;
  const char* pCubin;
};
static_assert(sizeof(CUpti_ModuleResourceData) == 24);

using CUpti_CallbackFunc = void (*)(void* userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void* cbdata);

// functionParams layouts (generated_cuda_meta.h).
struct cuMemAlloc_v2_params {
  CUdeviceptr* dptr;
  size_t bytesize;
};
struct cuMemAllocPitch_v2_params {
  CUdeviceptr* dptr;
  size_t* pPitch;
  size_t WidthInBytes;
  size_t Height;
  unsigned int ElementSizeBytes;
};
struct cuMemFree_v2_params {
  CUdeviceptr dptr;
};
struct cuMemAllocManaged_params {
  CUdeviceptr* dptr;
  size_t bytesize;
  unsigned int flags;
};
struct cuMemAllocAsync_params {
  CUdeviceptr* dptr;
  size_t bytesize;
  CUstream hStream;
};
struct cuMemAllocFromPoolAsync_params {
  CUdeviceptr* dptr;
  size_t bytesize;
  CUmemoryPool pool;
  CUstream hStream;
};
struct cuMemFreeAsync_params {
  CUdeviceptr dptr;
  CUstream hStream;
};
struct cuMemCreate_params {
  CUmemGenericAllocationHandle* handle;
  size_t size;
  const CUmemAllocationProp* prop;
  unsigned long long flags;
};
struct cuMemRelease_params {
  CUmemGenericAllocationHandle handle;
};
struct cuMemMap_params {
  CUdeviceptr ptr;
  size_t size;
  size_t offset;
  CUmemGenericAllocationHandle handle;
  unsigned long long flags;
};
struct cuMemUnmap_params {
  CUdeviceptr ptr;
  size_t size;
};
struct cuMemRetainAllocationHandle_params {
  CUmemGenericAllocationHandle* handle;
  void* addr;
};
struct cuMemImportFromShareableHandle_params {
  CUmemGenericAllocationHandle* handle;
  void* osHandle;
  int shHandleType;
};
struct cuMemPoolTrimTo_params {
  CUmemoryPool pool;
  size_t minBytesToKeep;
};
struct cuMemPoolDestroy_params {
  CUmemoryPool pool;
};
struct cuDeviceSetMemPool_params {
  CUdevice dev;
  CUmemoryPool pool;
};
struct cuDeviceGraphMemTrim_params {
  CUdevice device;
};
struct cuCtxCreate_v2_params {
  CUcontext* pctx;
  unsigned int flags;
  CUdevice dev;
};
struct cuCtxCreate_v3_params {
  CUcontext* pctx;
  void* paramsArray;  // CUexecAffinityParam*
  int numParams;
  unsigned int flags;
  CUdevice dev;
};
struct cuCtxCreate_v4_params {
  CUcontext* pctx;
  void* ctxCreateParams;  // CUctxCreateParams*
  unsigned int flags;
  CUdevice dev;
};
struct cuCtxDestroy_v2_params {
  CUcontext ctx;
};
struct cuDevicePrimaryCtxRetain_params {
  CUcontext* pctx;
  CUdevice dev;
};
struct cuDevicePrimaryCtxRelease_v2_params {
  CUdevice dev;
};
struct cuDevicePrimaryCtxReset_v2_params {
  CUdevice dev;
};
struct cuModuleLoad_params {
  CUmodule* module;
  const char* fname;
};
struct cuModuleLoadData_params {
  CUmodule* module;
  const void* image;
};
struct cuModuleLoadDataEx_params {
  CUmodule* module;
  const void* image;
  unsigned int numOptions;
  void* options;  // CUjit_option*
  void** optionValues;
};
struct cuModuleUnload_params {
  CUmodule hmod;
};
struct cuModuleGetFunction_params {
  CUfunction* hfunc;
  CUmodule hmod;
  const char* name;
};
struct cuMemGetAllocationGranularity_params {
  size_t* granularity;
  const CUmemAllocationProp* prop;
  int option;
};
struct cuMemAddressReserve_params {
  CUdeviceptr* ptr;
  size_t size;
  size_t alignment;
  CUdeviceptr addr;
  unsigned long long flags;
};
struct cuMemAddressFree_params {
  CUdeviceptr ptr;
  size_t size;
};
struct cuMemSetAccess_params {
  CUdeviceptr ptr;
  size_t size;
  const CUmemAccessDesc* desc;
  size_t count;
};
struct cuDeviceGetDefaultMemPool_params {
  CUmemoryPool* pool_out;
  CUdevice dev;
};
struct cuDeviceGetMemPool_params {
  CUmemoryPool* pool;
  CUdevice dev;
};
struct cuMemPoolCreate_params {
  CUmemoryPool* pool;
  const CUmemPoolProps* poolProps;
};
struct cuMemPoolGetAttribute_params {
  CUmemoryPool pool;
  int attr;
  void* value;
};
using cuMemPoolSetAttribute_params = cuMemPoolGetAttribute_params;
struct cuStreamSynchronize_params {
  CUstream hStream;
};
struct cuEventSynchronize_params {
  CUevent hEvent;
};
struct cuCtxSynchronize_v2_params {
  CUcontext ctx;
};
struct cuGraphCreate_params {
  CUgraph* phGraph;
  unsigned int flags;
};
struct cuGraphAddMemAllocNode_params {
  CUgraphNode* phGraphNode;
  CUgraph hGraph;
  const CUgraphNode* dependencies;
  size_t numDependencies;
  CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams;
};
struct cuGraphAddMemFreeNode_params {
  CUgraphNode* phGraphNode;
  CUgraph hGraph;
  const CUgraphNode* dependencies;
  size_t numDependencies;
  CUdeviceptr dptr;
};
struct cuGraphInstantiateWithFlags_params {
  CUgraphExec* phGraphExec;
  CUgraph hGraph;
  unsigned long long flags;
};
struct cuGraphUpload_params {
  CUgraphExec hGraph;
  CUstream hStream;
};
using cuGraphLaunch_params = cuGraphUpload_params;
struct cuGraphExecDestroy_params {
  CUgraphExec hGraphExec;
};
struct cuGraphDestroy_params {
  CUgraph hGraph;
};
struct cuDeviceGetGraphMemAttribute_params {
  CUdevice device;
  int attr;
  void* value;
};
using cuDeviceSetGraphMemAttribute_params = cuDeviceGetGraphMemAttribute_params;
struct cuMemPrefetchAsync_v2_params {
  CUdeviceptr devPtr;
  size_t count;
  CUmemLocation location;
  unsigned int flags;
  CUstream hStream;
};
// Runtime-domain params share this head: {void** devPtr; size_t size; ...} / {void* devPtr}.
struct cudaMalloc_v3020_params {
  void** devPtr;
  size_t size;
};
struct cudaFree_v3020_params {
  void* devPtr;
};

using PFN_cuptiSubscribe = CUptiResult (*)(CUpti_SubscriberHandle* subscriber,
                                           CUpti_CallbackFunc callback, void* userdata);
using PFN_cuptiUnsubscribe = CUptiResult (*)(CUpti_SubscriberHandle subscriber);
using PFN_cuptiEnableCallback = CUptiResult (*)(std::uint32_t enable,
                                                CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
using PFN_cuptiEnableDomain = CUptiResult (*)(std::uint32_t enable,
                                              CUpti_SubscriberHandle subscriber,
                                              CUpti_CallbackDomain domain);
using PFN_cuptiGetResultString = CUptiResult (*)(CUptiResult result, const char** text);

}  // namespace gpumem::abi
