// The simulated CUPTI: one subscriber, per-cbid enables, and ENTER/EXIT callbacks carrying the
// real params, return value and correlation slot, for driver calls and for the runtime's double
// view; plus callbacks from many threads at once (run under ThreadSanitizer too).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "driver/abi/cupti.hpp"
#include "sim_libraries.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;

struct Event {
  int domain;
  CUpti_CallbackId cbid;
  int site;
  std::string function;
  std::uint64_t bytes;  // from the params, for allocations
  CUdeviceptr pointer;  // *dptr at EXIT for allocations, dptr for frees
  CUresult result;      // at EXIT
  std::uint64_t* correlation;
  std::uint64_t correlation_value;  // what ENTER stored, as seen at EXIT
  CUcontext context;
};

struct Recorder {
  std::mutex mutex;
  std::vector<Event> events;

  static void callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const void* raw) {
    auto* self = static_cast<Recorder*>(userdata);
    const auto* data = static_cast<const CUpti_CallbackData*>(raw);
    Event e{domain,
            cbid,
            data->callbackSite,
            data->functionName,
            0,
            0,
            -1,
            data->correlationData,
            0,
            data->context};
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
        const auto* p = static_cast<const cuMemAlloc_v2_params*>(data->functionParams);
        e.bytes = p->bytesize;
        if (data->callbackSite == CUPTI_API_EXIT) e.pointer = *p->dptr;
      } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2) {
        e.pointer = static_cast<const cuMemFree_v2_params*>(data->functionParams)->dptr;
      } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemCreate) {
        const auto* p = static_cast<const cuMemCreate_params*>(data->functionParams);
        e.bytes = p->size;
        e.pointer = static_cast<CUdeviceptr>(p->prop->locationId);
      }
    } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
               cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) {
      e.bytes = static_cast<const cudaMalloc_v3020_params*>(data->functionParams)->size;
    }
    if (data->callbackSite == CUPTI_API_ENTER) {
      *data->correlationData = 0xC0FFEE;
    } else {
      e.result = *static_cast<const int*>(data->functionReturnValue);
      e.correlation_value = *data->correlationData;
    }
    std::lock_guard lock(self->mutex);
    self->events.push_back(std::move(e));
  }
};

struct Cupti {
  SimLibrary lib{"libcupti.so.13"};
  PFN_cuptiSubscribe subscribe = lib.get<PFN_cuptiSubscribe>("cuptiSubscribe");
  PFN_cuptiUnsubscribe unsubscribe = lib.get<PFN_cuptiUnsubscribe>("cuptiUnsubscribe");
  PFN_cuptiEnableCallback enable = lib.get<PFN_cuptiEnableCallback>("cuptiEnableCallback");
  PFN_cuptiEnableDomain enable_domain = lib.get<PFN_cuptiEnableDomain>("cuptiEnableDomain");
};

struct CuptiCuda {
  SimLibrary lib{"libcuda.so.1"};
  PFN_cuMemAlloc alloc = lib.get<PFN_cuMemAlloc>("cuMemAlloc_v2");
  PFN_cuMemFree free = lib.get<PFN_cuMemFree>("cuMemFree_v2");
  CUcontext context = nullptr;
  void use(int ordinal) {
    ASSERT_EQ(lib.get<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
    ASSERT_EQ(lib.get<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&context, ordinal),
              CUDA_SUCCESS);
    ASSERT_EQ(lib.get<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(context), CUDA_SUCCESS);
  }
};

TEST(simCupti, OneSubscriberAtATime) {
  SimGpu gpu;
  Cupti cupti;
  CUpti_SubscriberHandle first = nullptr, second = nullptr;
  ASSERT_EQ(cupti.subscribe(&first, nullptr, nullptr), CUPTI_SUCCESS);
  EXPECT_EQ(cupti.subscribe(&second, nullptr, nullptr),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  ASSERT_EQ(cupti.unsubscribe(first), CUPTI_SUCCESS);
  EXPECT_EQ(cupti.subscribe(&second, nullptr, nullptr), CUPTI_SUCCESS);
  const char* text = nullptr;
  ASSERT_EQ(cupti.lib.get<PFN_cuptiGetResultString>("cuptiGetResultString")(39, &text),
            CUPTI_SUCCESS);
  EXPECT_STREQ(text, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
}

TEST(simCupti, BusyFault) {
  SimGpu gpu(kTwoGpus, "cupti_busy");
  Cupti cupti;
  CUpti_SubscriberHandle s = nullptr;
  EXPECT_EQ(cupti.subscribe(&s, nullptr, nullptr), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
}

TEST(simCupti, DriverCallbacksCarryParamsAndResults) {
  SimGpu gpu(R"({"devices": [{"name": "A", "total_mib": 100, "reserved_mib": 0}]})");
  CuptiCuda cuda;
  cuda.use(0);
  Cupti cupti;
  Recorder recorder;
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.subscribe(&s, &Recorder::callback, &recorder), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable(1, s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2),
            CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable(1, s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2),
            CUPTI_SUCCESS);
  CUdeviceptr p = 0, q = 0;
  ASSERT_EQ(cuda.alloc(&p, 5 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(cuda.alloc(&q, 200 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuda.free(p), CUDA_SUCCESS);
  std::size_t free = 0, total = 0;
  ASSERT_EQ(cuda.lib.get<PFN_cuMemGetInfo>("cuMemGetInfo_v2")(&free, &total),
            CUDA_SUCCESS);  // not enabled

  ASSERT_EQ(recorder.events.size(), 6u);
  const auto& e = recorder.events;
  EXPECT_EQ(e[0].site, CUPTI_API_ENTER);
  EXPECT_EQ(e[0].function, "cuMemAlloc_v2");
  EXPECT_EQ(e[0].bytes, 5 * MiB);
  EXPECT_EQ(e[0].context, cuda.context);
  EXPECT_EQ(e[1].site, CUPTI_API_EXIT);
  EXPECT_EQ(e[1].result, CUDA_SUCCESS);
  EXPECT_EQ(e[1].pointer, p);
  EXPECT_EQ(e[1].correlation, e[0].correlation);
  EXPECT_EQ(e[1].correlation_value, 0xC0FFEEu);
  EXPECT_EQ(e[3].cbid, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
  EXPECT_EQ(e[3].result, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(e[4].cbid, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2);
  EXPECT_EQ(e[4].pointer, p);
  EXPECT_EQ(e[5].result, CUDA_SUCCESS);

  recorder.events.clear();
  ASSERT_EQ(cupti.enable(0, s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2),
            CUPTI_SUCCESS);
  ASSERT_EQ(cuda.alloc(&p, 1), CUDA_SUCCESS);
  EXPECT_TRUE(recorder.events.empty());
  ASSERT_EQ(cupti.unsubscribe(s), CUPTI_SUCCESS);
  ASSERT_EQ(cuda.free(p), CUDA_SUCCESS);
  EXPECT_TRUE(recorder.events.empty());
}

TEST(simCupti, EveryDriverMemoryCallFires) {
  SimGpu gpu;
  CuptiCuda cuda;
  cuda.use(0);
  Cupti cupti;
  Recorder recorder;
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.subscribe(&s, &Recorder::callback, &recorder), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable_domain(1, s, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
  CUdeviceptr p = 0;
  std::size_t pitch = 0;
  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocPitch>("cuMemAllocPitch_v2")(&p, &pitch, 100, 2, 4),
            CUDA_SUCCESS);
  ASSERT_EQ(cuda.free(p), CUDA_SUCCESS);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocManaged>("cuMemAllocManaged")(&p, 64, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocAsync>("cuMemAllocAsync_ptsz")(&p, 64, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemFreeAsync>("cuMemFreeAsync")(p, nullptr), CUDA_SUCCESS);
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuda.lib.get<PFN_cuDeviceGetMemPool>("cuDeviceGetMemPool")(&pool, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemAllocFromPoolAsync>("cuMemAllocFromPoolAsync_ptsz")(&p, 64, pool,
                                                                                      nullptr),
            CUDA_SUCCESS);
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.locationType = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.locationId = 1;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuda.lib.get<PFN_cuMemCreate>("cuMemCreate")(&handle, 2 * MiB, &prop, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuda.lib.get<PFN_cuMemRelease>("cuMemRelease")(handle), CUDA_SUCCESS);

  std::vector<CUpti_CallbackId> enters;
  for (const Event& e : recorder.events) {
    if (e.site == CUPTI_API_ENTER) enters.push_back(e.cbid);
  }
  EXPECT_EQ(
      enters,
      (std::vector<CUpti_CallbackId>{
          CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
          CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetMemPool,
          CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
          CUPTI_DRIVER_TRACE_CBID_cuMemRelease}));
  const Event& create = recorder.events[recorder.events.size() - 4];
  EXPECT_EQ(create.bytes, 2 * MiB);
  EXPECT_EQ(create.pointer, 1u);  // prop->location.id
}

TEST(simCupti, RuntimeAndDriverDoubleView) {
  SimGpu gpu;
  Cupti cupti;
  Recorder recorder;
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.subscribe(&s, &Recorder::callback, &recorder), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable_domain(1, s, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable_domain(1, s, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_SUCCESS);
  SimLibrary cudart("libcudart.so.13");
  void* p = nullptr;
  ASSERT_EQ(cudart.get<int (*)(void**, std::size_t)>("cudaMalloc")(&p, 3 * MiB), 0);
  ASSERT_EQ(cudart.get<int (*)(void*)>("cudaFree")(p), 0);
  std::vector<std::pair<int, CUpti_CallbackId>> seen;
  for (const Event& e : recorder.events) seen.emplace_back(e.domain * 10 + e.site, e.cbid);
  using P = std::pair<int, CUpti_CallbackId>;
  EXPECT_EQ(seen, (std::vector<P>{P{20, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020},
                                  P{10, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2},
                                  P{11, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2},
                                  P{21, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020},
                                  P{20, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020},
                                  P{10, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2},
                                  P{11, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2},
                                  P{21, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020}}));
  EXPECT_EQ(recorder.events[0].bytes, 3 * MiB);
  EXPECT_EQ(recorder.events[1].bytes, 3 * MiB);
  EXPECT_EQ(recorder.events[2].pointer, reinterpret_cast<CUdeviceptr>(p));
}

TEST(simCupti, RuntimeChargesTheContextOnFirstUse) {
  SimGpu gpu(
      R"({"devices": [{"name": "A", "context_mib": 300}, {"name": "B", "context_mib": 200}]})");
  SimLibrary cudart("libcudart.so.13");
  ASSERT_EQ(cudart.get<int (*)(int)>("cudaSetDevice")(1), 0);
  int device = -1;
  ASSERT_EQ(cudart.get<int (*)(int*)>("cudaGetDevice")(&device), 0);
  EXPECT_EQ(device, 1);
  SimLibrary cuda("libcuda.so.1");
  CUcontext context = nullptr;
  ASSERT_EQ(cuda.get<PFN_cuCtxGetCurrent>("cuCtxGetCurrent")(&context), CUDA_SUCCESS);
  ASSERT_NE(context, nullptr);
  std::size_t free = 0, total = 0;
  ASSERT_EQ(cuda.get<PFN_cuMemGetInfo>("cuMemGetInfo_v2")(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total - free, 200 * MiB);
  EXPECT_EQ(cudart.get<int (*)(int)>("cudaSetDevice")(5), 101);
}

TEST(simCupti, ManyThreadsAllocateUnderASubscriber) {
  SimGpu gpu;
  CuptiCuda cuda;
  cuda.use(0);
  Cupti cupti;
  std::atomic<std::int64_t> balance{0};
  struct Tally {
    static void callback(void* userdata, CUpti_CallbackDomain, CUpti_CallbackId cbid,
                         const void* raw) {
      const auto* data = static_cast<const CUpti_CallbackData*>(raw);
      if (data->callbackSite != CUPTI_API_EXIT ||
          *static_cast<const int*>(data->functionReturnValue) != 0)
        return;
      auto* sum = static_cast<std::atomic<std::int64_t>*>(userdata);
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
        *sum += static_cast<std::int64_t>(
            static_cast<const cuMemAlloc_v2_params*>(data->functionParams)->bytesize);
      }
    }
  };
  CUpti_SubscriberHandle s = nullptr;
  ASSERT_EQ(cupti.subscribe(&s, &Tally::callback, &balance), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable_domain(1, s, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      ASSERT_EQ(cuda.lib.get<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(cuda.context), CUDA_SUCCESS);
      for (int i = 0; i < 200; ++i) {
        CUdeviceptr p = 0;
        ASSERT_EQ(cuda.alloc(&p, 1000), CUDA_SUCCESS);
        ASSERT_EQ(cuda.free(p), CUDA_SUCCESS);
      }
    });
  }
  // Subscribers come and go while the threads run: callbacks must never touch freed state.
  ASSERT_EQ(cupti.unsubscribe(s), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.subscribe(&s, &Tally::callback, &balance), CUPTI_SUCCESS);
  ASSERT_EQ(cupti.enable_domain(1, s, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
  for (auto& t : threads) t.join();
  EXPECT_LE(balance.load(), 4 * 200 * 1000);
  EXPECT_EQ(cupti.unsubscribe(s), CUPTI_SUCCESS);
}

}  // namespace
}  // namespace gpumem::testing
