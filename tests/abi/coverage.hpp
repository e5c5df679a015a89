// The run-time half of the ABI conformance tests: that every declaration gpumem makes and every
// symbol it loads was among those checked at compile time, and that gpumem loads the version of
// each function that NVIDIA's headers make current.
#pragma once

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#define GPUMEM_STRINGIFY_(x) #x
#define GPUMEM_STRINGIFY(x) GPUMEM_STRINGIFY_(x)

namespace gpumem::abi_test {

struct Function {
  std::string_view pfn, api, symbol;
};

class Coverage {
 public:
  explicit Coverage(const char* test) : test_(test) {}

  // Each name gpumem declares (what) must be among those checked.
  void declared(std::string_view what, std::span<const std::string_view> names,
                std::span<const std::string_view> checked) {
    for (std::string_view name : names) {
      if (std::find(checked.begin(), checked.end(), name) == checked.end()) {
        fail(std::string(what) + " " + std::string(name) +
             " is declared in src/driver/abi but not checked: add it to tests/abi");
      }
    }
    count_ += names.size();
  }

  // Each loaded symbol must be one whose signature was checked, and each API gpumem loads must
  // be loaded (first or as a fallback) as the version NVIDIA's headers make current.
  void loaded(std::span<const std::string_view> symbols, std::span<const Function> functions,
              std::span<const std::pair<std::string_view, std::string_view>> current) {
    for (std::string_view symbol : symbols) {
      const auto f = std::find_if(functions.begin(), functions.end(),
                                  [&](const Function& fn) { return fn.symbol == symbol; });
      if (f == functions.end()) {
        fail("src/driver loads " + std::string(symbol) +
             ", whose signature is not checked: add it to tests/abi");
        continue;
      }
      const auto now = std::find_if(current.begin(), current.end(),
                                    [&](const auto& entry) { return entry.first == f->api; });
      if (now == current.end()) continue;
      if (std::find(symbols.begin(), symbols.end(), now->second) == symbols.end()) {
        fail("src/driver loads " + std::string(f->api) + " as " + std::string(symbol) +
             ", but NVIDIA's headers make " + std::string(now->second) + " the current version");
      }
    }
    count_ += symbols.size();
  }

  int finish(std::string_view headers) const {
    if (failures_ == 0) {
      std::printf("%s: %zu declarations and loaded symbols match %.*s\n", test_, count_,
                  static_cast<int>(headers.size()), headers.data());
    }
    return failures_ == 0 ? 0 : 1;
  }

 private:
  void fail(const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", test_, why.c_str());
    ++failures_;
  }

  const char* test_;
  std::size_t count_ = 0;
  int failures_ = 0;
};

}  // namespace gpumem::abi_test
