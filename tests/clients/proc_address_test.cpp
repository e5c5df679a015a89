// The simulated driver's cuGetProcAddress (sim/cuda/proc_address.cpp), through which NVIDIA's own
// clients (cuda-bindings, the runtime) reach every driver function: each symbol the simulator
// exports (sim/cuda/cuda.map) is reachable by its base name, and the documented argument rules
// hold. test_cuda_bindings.py checks the version rules through NVIDIA's binding.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "driver/abi/cuda.hpp"
#include "sim/sim_libraries.hpp"

namespace gpumem::testing {
namespace {

using namespace gpumem::abi;
using GetProcAddress = CUresult (*)(const char* symbol, void** pfn, int cuda_version,
                                    std::uint64_t flags, int* symbol_status);
constexpr std::uint64_t kDefault = 0, kPerThread = 2;

// The exported driver functions, as the version script lists them.
std::vector<std::string> exported_functions() {
  std::ifstream map(GPUMEM_SOURCE_DIR "/sim/cuda/cuda.map");
  std::stringstream text;
  text << map.rdbuf();
  std::vector<std::string> names;
  const std::string all = text.str();
  const std::regex symbol(R"(\b(cu[A-Z][A-Za-z0-9_]*);)");
  for (std::sregex_iterator it(all.begin(), all.end(), symbol), end; it != end; ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

// cuMemAlloc_v2 → cuMemAlloc, cuMemAllocAsync_ptsz → cuMemAllocAsync.
std::string base_name(std::string name) {
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    if (name.ends_with(suffix)) name.resize(name.size() - 5);
  }
  static const std::regex version(R"(_v[0-9]+$)");
  return std::regex_replace(name, version, "");
}

TEST(simProcAddress, EveryExportIsReachableByItsBaseName) {
  SimGpu gpu;
  SimLibrary cuda("libcuda.so.1");
  auto get = cuda.get<GetProcAddress>("cuGetProcAddress_v2");
  const std::vector<std::string> names = exported_functions();
  ASSERT_GT(names.size(), 30u);
  for (const std::string& name : names) {
    void* const expected =
        ::dlsym(::dlopen(sim_path("libcuda.so.1").c_str(), RTLD_NOW), name.c_str());
    ASSERT_NE(expected, nullptr) << name << " is in cuda.map but not exported";
    bool reached = false;
    // Every CUDA version a caller may name (major * 1000 + minor * 10), both stream modes.
    for (int version = 2000; version <= 13000 && !reached; version += 10) {
      for (std::uint64_t flags : {kDefault, kPerThread}) {
        void* pfn = nullptr;
        int status = -1;
        ASSERT_EQ(get(base_name(name).c_str(), &pfn, version, flags, &status), CUDA_SUCCESS);
        reached = reached || pfn == expected;
      }
    }
    EXPECT_TRUE(reached) << name << " is exported but cuGetProcAddress(\"" << base_name(name)
                         << "\") never answers it: add it to sim/cuda/proc_address.cpp";
  }
}

TEST(simProcAddress, ArgumentsAreChecked) {
  SimGpu gpu;
  SimLibrary cuda("libcuda.so.1");
  auto get = cuda.get<GetProcAddress>("cuGetProcAddress_v2");
  void* pfn = &pfn;
  EXPECT_EQ(get(nullptr, &pfn, 13000, kDefault, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pfn, nullptr);
  EXPECT_EQ(get("cuInit", nullptr, 13000, kDefault, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(get("cuInit", &pfn, 13000, 4, nullptr), CUDA_ERROR_INVALID_VALUE);
  // The status is optional; the legacy entry point (CUDA 11.3) has none.
  EXPECT_EQ(get("cuInit", &pfn, 13000, kDefault, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(pfn, cuda.get<void*>("cuInit"));
  using GetProcAddressV1 = CUresult (*)(const char*, void**, int, std::uint64_t);
  pfn = nullptr;
  EXPECT_EQ(cuda.get<GetProcAddressV1>("cuGetProcAddress")("cuMemAlloc", &pfn, 11030, kDefault),
            CUDA_SUCCESS);
  EXPECT_EQ(pfn, cuda.get<void*>("cuMemAlloc_v2"));
}

TEST(simProcAddress, VersionsBeyondTheDriversAreRefused) {
  SimGpu gpu(R"({"cuda_driver_version": 12040, "devices": [{"name": "NVIDIA H100"}]})");
  SimLibrary cuda("libcuda.so.1");
  auto get = cuda.get<GetProcAddress>("cuGetProcAddress_v2");
  void* pfn = nullptr;
  int status = -1;
  EXPECT_EQ(get("cuMemAlloc", &pfn, 12040, kDefault, &status), CUDA_SUCCESS);
  EXPECT_EQ(pfn, cuda.get<void*>("cuMemAlloc_v2"));
  EXPECT_EQ(status, 0);
  EXPECT_EQ(get("cuMemAlloc", &pfn, 13000, kDefault, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pfn, nullptr);
}

}  // namespace
}  // namespace gpumem::testing
