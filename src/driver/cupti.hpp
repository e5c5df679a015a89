// CUPTI, loaded on first use: GPUMEM_CUPTI_LIBRARY; else one the program already loaded; else
// libcupti.so.<major of the program's CUDA runtime, or of the driver>, then its neighbours.
#pragma once

#include <string>

#include "driver/abi/cupti.hpp"

namespace gpumem::driver {

struct Cupti {
  bool loaded = false;
  std::string why;     // when not loaded
  std::string path;    // the library chosen
  std::string choice;  // why that one ("already loaded by the program", …)
  abi::PFN_cuptiSubscribe subscribe = nullptr;
  abi::PFN_cuptiUnsubscribe unsubscribe = nullptr;
  abi::PFN_cuptiEnableCallback enableCallback = nullptr;
  abi::PFN_cuptiEnableDomain enableDomain = nullptr;
  abi::PFN_cuptiGetResultString getResultString = nullptr;
};

const Cupti& cupti() noexcept;

std::string cupti_error_text(abi::CUptiResult code);

}  // namespace gpumem::driver
