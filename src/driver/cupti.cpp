#include "driver/cupti.hpp"

#include "driver/cuda.hpp"
#include "gpumem/internal/environment.hpp"
#include "gpumem/internal/shared_library.hpp"

namespace gpumem::driver {

using support::SharedLibrary;

namespace {

constexpr const char* kNewest = "libcupti.so.13";
constexpr const char* kOlder = "libcupti.so.12";
constexpr const char* kUnversioned = "libcupti.so";

// CUPTI is versioned with the toolkit, and one process must not hold two: GPUMEM_CUPTI_LIBRARY
// if set; else the CUPTI the program has loaded already (torch.profiler's, say); else the one of
// the CUDA major of the program's runtime, if loaded, or of the driver; then the others.
SharedLibrary choose(std::string& why) {
  if (support::env_value("GPUMEM_CUPTI_LIBRARY") != nullptr) {
    why = "named by GPUMEM_CUPTI_LIBRARY";
    return SharedLibrary::open("GPUMEM_CUPTI_LIBRARY", {});
  }
  if (SharedLibrary loaded = SharedLibrary::find_loaded({kNewest, kOlder, kUnversioned});
      loaded.loaded()) {
    why = "already loaded by the program";
    return loaded;
  }
  int major = 0;
  if (SharedLibrary::find_loaded({"libcudart.so.12"}).loaded()) {
    major = 12;
    why = "the CUDA 12 runtime of the program";
  } else if (SharedLibrary::find_loaded({"libcudart.so.13"}).loaded()) {
    major = 13;
    why = "the CUDA 13 runtime of the program";
  } else {
    major = cuda_driver_version() / 1000;
    why = "the driver's CUDA " + std::to_string(major);
  }
  SharedLibrary library = major == 12
                              ? SharedLibrary::open(nullptr, {kOlder, kNewest, kUnversioned})
                              : SharedLibrary::open(nullptr, {kNewest, kOlder, kUnversioned});
  if (library.loaded() && library.path() != (major == 12 ? kOlder : kNewest)) {
    why = "no CUPTI for " + why + "; found " + library.path();
  }
  return library;
}

Cupti load() {
  Cupti cupti;
  static const SharedLibrary library = choose(cupti.choice);
  cupti.path = library.path();
  if (!library.loaded()) {
    cupti.why = "CUPTI not found";
    if (!library.error().empty()) cupti.why += " (" + library.error() + ")";
    return cupti;
  }
  cupti.subscribe = library.function<abi::PFN_cuptiSubscribe>("cuptiSubscribe");
  cupti.unsubscribe = library.function<abi::PFN_cuptiUnsubscribe>("cuptiUnsubscribe");
  cupti.enableCallback = library.function<abi::PFN_cuptiEnableCallback>("cuptiEnableCallback");
  cupti.enableDomain = library.function<abi::PFN_cuptiEnableDomain>("cuptiEnableDomain");
  cupti.getResultString = library.function<abi::PFN_cuptiGetResultString>("cuptiGetResultString");
  if (cupti.subscribe == nullptr || cupti.unsubscribe == nullptr ||
      cupti.enableCallback == nullptr) {
    cupti.why = "CUPTI at " + library.path() + " lacks the callback API";
    return cupti;
  }
  cupti.loaded = true;
  return cupti;
}

}  // namespace

const Cupti& cupti() noexcept {
  // Never destroyed: CUPTI may call back into gpumem from other threads during exit.
  static const Cupti* const instance = new Cupti(load());
  return *instance;
}

std::string cupti_error_text(abi::CUptiResult code) {
  const char* text = nullptr;
  const Cupti& loaded = cupti();
  if (loaded.getResultString != nullptr && loaded.getResultString(code, &text) == 0 &&
      text != nullptr) {
    return text;
  }
  return "CUPTI error " + std::to_string(code);
}

}  // namespace gpumem::driver
