// CUPTI, loaded on first use: GPUMEM_CUPTI_LIBRARY, else libcupti.so.<major of the driver's CUDA>
// and its neighbours.
#pragma once

#include <string>

#include "driver/abi/cupti.hpp"

namespace gpumem::driver {

struct Cupti {
  bool loaded = false;
  std::string why;
  abi::PFN_cuptiSubscribe subscribe = nullptr;
  abi::PFN_cuptiUnsubscribe unsubscribe = nullptr;
  abi::PFN_cuptiEnableCallback enableCallback = nullptr;
  abi::PFN_cuptiGetResultString getResultString = nullptr;
};

const Cupti& cupti() noexcept;

std::string cupti_error_text(abi::CUptiResult code);

}  // namespace gpumem::driver
