#include "driver/cupti.hpp"

#include "driver/library.hpp"

namespace gpumem::driver {
namespace {

Cupti load() {
  Cupti cupti;
  // CUPTI is versioned with the toolkit: try the current major first, then older ones.
  static const SharedLibrary library = SharedLibrary::open(
      "GPUMEM_CUPTI_LIBRARY", {"libcupti.so.13", "libcupti.so.12", "libcupti.so"});
  if (!library.loaded()) {
    cupti.why = "CUPTI not found";
    if (!library.error().empty()) cupti.why += " (" + library.error() + ")";
    return cupti;
  }
  cupti.subscribe = library.function<abi::PFN_cuptiSubscribe>("cuptiSubscribe");
  cupti.unsubscribe = library.function<abi::PFN_cuptiUnsubscribe>("cuptiUnsubscribe");
  cupti.enableCallback = library.function<abi::PFN_cuptiEnableCallback>("cuptiEnableCallback");
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
