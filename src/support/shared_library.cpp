#include "gpumem/internal/shared_library.hpp"

#include <dlfcn.h>

#include <utility>

#include "gpumem/internal/environment.hpp"

namespace gpumem::support {

namespace {

std::string last_dl_error() {
  const char* text = ::dlerror();
  return text != nullptr ? std::string(text) : std::string("unknown dlopen error");
}

}  // namespace

SharedLibrary SharedLibrary::open(const char* override_variable,
                                  std::initializer_list<const char*> names) {
  SharedLibrary library;
  const char* chosen =
      override_variable != nullptr ? support::env_value(override_variable) : nullptr;
  if (chosen != nullptr) {
    // The user named a file: loading anything else would silently measure another driver.
    library.path_ = chosen;
    library.handle_ = ::dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    if (library.handle_ == nullptr) library.error_ = last_dl_error();
    return library;
  }
  std::string errors;
  for (const char* name : names) {
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      library.handle_ = handle;
      library.path_ = name;
      library.error_.clear();
      return library;
    }
    if (!errors.empty()) errors += "; ";
    errors += last_dl_error();
  }
  library.error_ = errors;
  return library;
}

SharedLibrary SharedLibrary::find_loaded(std::initializer_list<const char*> names) {
  SharedLibrary library;
  for (const char* name : names) {
    if (void* handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      library.handle_ = handle;
      library.path_ = name;
      return library;
    }
  }
  library.error_ = "none loaded";
  return library;
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      path_(std::move(other.path_)),
      error_(std::move(other.error_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
    error_ = std::move(other.error_);
  }
  return *this;
}

void* SharedLibrary::symbol(const char* name) const noexcept {
  if (handle_ == nullptr) return nullptr;
  return ::dlsym(handle_, name);
}

}  // namespace gpumem::support
