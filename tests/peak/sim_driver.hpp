// Test helpers: the simulated driver's calls that gpumem itself never makes (async, pitch, VMM,
// managed, runtime) and a CUPTI subscriber of our own, standing in for torch.profiler.
#pragma once

#include <dlfcn.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "driver/abi/cuda.hpp"
#include "driver/abi/cupti.hpp"
#include "driver/cuda.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {

inline void* open_sim(const std::string& file) {
  void* handle = ::dlopen(sim_path(file).c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) throw std::runtime_error("cannot load " + file + ": " + ::dlerror());
  return handle;
}

template <class Fn>
Fn sim_symbol(const std::string& file, const char* name) {
  auto fn = reinterpret_cast<Fn>(::dlsym(open_sim(file), name));
  if (fn == nullptr) throw std::runtime_error(std::string("missing ") + name);
  return fn;
}

// Makes CUDA ordinal `ordinal`'s primary context current on the calling thread.
inline void use_device(int ordinal) {
  const driver::Cuda& cuda = driver::cuda();
  if (driver::cuda_init() != abi::CUDA_SUCCESS) throw std::runtime_error("cuInit failed");
  abi::CUdevice device = 0;
  abi::CUcontext context = nullptr;
  if (cuda.deviceGet(&device, ordinal) != abi::CUDA_SUCCESS ||
      cuda.devicePrimaryCtxRetain(&context, device) != abi::CUDA_SUCCESS ||
      cuda.ctxSetCurrent(context) != abi::CUDA_SUCCESS) {
    throw std::runtime_error("cannot make the device current");
  }
}

// Another CUPTI client (as torch.profiler would be): counts the driver calls it sees.
class OtherCuptiClient {
 public:
  OtherCuptiClient() {
    subscribe_ = sim_symbol<abi::PFN_cuptiSubscribe>("libcupti.so.13", "cuptiSubscribe");
    unsubscribe_ = sim_symbol<abi::PFN_cuptiUnsubscribe>("libcupti.so.13", "cuptiUnsubscribe");
    enable_domain_ = sim_symbol<abi::PFN_cuptiEnableDomain>("libcupti.so.13", "cuptiEnableDomain");
  }
  ~OtherCuptiClient() { unsubscribe(); }
  OtherCuptiClient(const OtherCuptiClient&) = delete;
  OtherCuptiClient& operator=(const OtherCuptiClient&) = delete;

  abi::CUptiResult subscribe() {
    const abi::CUptiResult rc = subscribe_(&handle_, &OtherCuptiClient::on_call, this);
    if (rc == abi::CUPTI_SUCCESS) {
      enable_domain_(1, handle_, abi::CUPTI_CB_DOMAIN_DRIVER_API);
    } else {
      handle_ = nullptr;
    }
    return rc;
  }
  void unsubscribe() {
    if (handle_ != nullptr) unsubscribe_(handle_);
    handle_ = nullptr;
  }
  int calls_seen() const { return calls_.load(); }

 private:
  static void on_call(void* self, abi::CUpti_CallbackDomain, abi::CUpti_CallbackId, const void*) {
    static_cast<OtherCuptiClient*>(self)->calls_.fetch_add(1);
  }
  abi::PFN_cuptiSubscribe subscribe_ = nullptr;
  abi::PFN_cuptiUnsubscribe unsubscribe_ = nullptr;
  abi::PFN_cuptiEnableDomain enable_domain_ = nullptr;
  abi::CUpti_SubscriberHandle handle_ = nullptr;
  std::atomic<int> calls_{0};
};

}  // namespace gpumem::testing
