// What the driver-behaviour tests read back from the simulated GPU: NVML's device and per-process
// figures, cuMemGetInfo, and typed driver symbols, plus a CUPTI recorder of resource events.
#pragma once

#include <unistd.h>

#include <mutex>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "driver/abi/cupti.hpp"
#include "driver/abi/nvml.hpp"
#include "sim_libraries.hpp"

namespace gpumem::testing {

using namespace gpumem::abi;

class Driver {
 public:
  SimLibrary cuda{"libcuda.so.1"};
  SimLibrary nvml{"libnvidia-ml.so.1"};

  template <class Fn>
  Fn fn(const char* name) const {
    return cuda.get<Fn>(name);
  }

  // cuInit, then CUDA ordinal's primary context made current.
  void use(int ordinal) {
    ASSERT_EQ(fn<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
    CUcontext context = nullptr;
    ASSERT_EQ(fn<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&context, ordinal),
              CUDA_SUCCESS);
    ASSERT_EQ(fn<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(context), CUDA_SUCCESS);
  }

  nvmlDevice_t device(unsigned nvml_index) const {
    static const bool ready = nvml.get<PFN_nvmlInit_v2>("nvmlInit_v2")() == NVML_SUCCESS;
    EXPECT_TRUE(ready);
    nvmlDevice_t device = nullptr;
    EXPECT_EQ(nvml.get<PFN_nvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2")(nvml_index,
                                                                                        &device),
              NVML_SUCCESS);
    return device;
  }

  // NVML v2's used bytes (reserved excluded).
  std::uint64_t nvml_used(unsigned nvml_index) const {
    nvmlMemory_v2_t m{};
    m.version = kNvmlMemory_v2;
    EXPECT_EQ(nvml.get<PFN_nvmlDeviceGetMemoryInfo_v2>("nvmlDeviceGetMemoryInfo_v2")(
                  device(nvml_index), &m),
              NVML_SUCCESS);
    return m.used;
  }

  // This process's usedGpuMemory in nvmlDeviceGetComputeRunningProcesses_v3; 0 when not listed.
  std::uint64_t process_used(unsigned nvml_index) const {
    nvmlProcessInfo_v2_t records[16]{};
    unsigned count = 16;
    EXPECT_EQ(nvml.get<PFN_nvmlDeviceGetRunningProcesses>(
                  "nvmlDeviceGetComputeRunningProcesses_v3")(device(nvml_index), &count, records),
              NVML_SUCCESS);
    for (unsigned i = 0; i < count; ++i) {
      if (records[i].pid == static_cast<unsigned>(::getpid())) return records[i].usedGpuMemory;
    }
    return 0;
  }
  bool listed(unsigned nvml_index) const {
    nvmlProcessInfo_v2_t records[16]{};
    unsigned count = 16;
    nvml.get<PFN_nvmlDeviceGetRunningProcesses>("nvmlDeviceGetComputeRunningProcesses_v3")(
        device(nvml_index), &count, records);
    for (unsigned i = 0; i < count; ++i) {
      if (records[i].pid == static_cast<unsigned>(::getpid())) return true;
    }
    return false;
  }

  // total − free from cuMemGetInfo_v2 in the current context.
  std::uint64_t cuda_used() const {
    std::size_t free = 0, total = 0;
    EXPECT_EQ(fn<PFN_cuMemGetInfo>("cuMemGetInfo_v2")(&free, &total), CUDA_SUCCESS);
    return total - free;
  }
};

// Resource-domain (and optionally driver-domain) events seen through the simulated CUPTI.
struct ResourceEvent {
  CUpti_CallbackId cbid;
  CUcontext context;
  std::uint32_t module_id;
  std::size_t cubin_size;
  const char* cubin;
};

class ResourceRecorder {
 public:
  ResourceRecorder() {
    EXPECT_EQ(cupti_.get<PFN_cuptiSubscribe>("cuptiSubscribe")(&subscriber_, &callback, this),
              CUPTI_SUCCESS);
    EXPECT_EQ(cupti_.get<PFN_cuptiEnableDomain>("cuptiEnableDomain")(1, subscriber_,
                                                                     CUPTI_CB_DOMAIN_RESOURCE),
              CUPTI_SUCCESS);
  }
  ~ResourceRecorder() { cupti_.get<PFN_cuptiUnsubscribe>("cuptiUnsubscribe")(subscriber_); }

  std::vector<ResourceEvent> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  static void callback(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const void* raw) {
    if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
    const auto* data = static_cast<const CUpti_ResourceData*>(raw);
    ResourceEvent e{cbid, data->context, 0, 0, nullptr};
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ||
        cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
      const auto* module = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
      e.module_id = module->moduleId;
      e.cubin_size = module->cubinSize;
      e.cubin = module->pCubin;
    }
    auto* recorder = static_cast<ResourceRecorder*>(self);
    std::lock_guard lock(recorder->mutex_);
    recorder->events_.push_back(e);
  }

  SimLibrary cupti_{"libcupti.so.13"};
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::mutex mutex_;
  std::vector<ResourceEvent> events_;
};

}  // namespace gpumem::testing
