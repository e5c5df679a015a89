// gpumem's declarations of NVML (src/driver/abi/nvml.hpp) against NVIDIA's nvml.h (pip:
// nvidia-nvml-dev). gpumem's live in gpumem::abi, NVIDIA's in the global namespace. nvml.h is read
// with NVML_NO_UNVERSIONED_FUNC_DEFS, which declares every exported symbol under its own name,
// legacy versions included, so that each symbol gpumem loads is checked against exactly that
// symbol's signature.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "compatible.hpp"
#include "coverage.hpp"
#include "driver/abi/nvml.hpp"
#include "nvml_functions.inc"

// nvml.h #defines these names: read gpumem's values before it is included.
namespace captured {
constexpr auto name_buffer = gpumem::abi::NVML_DEVICE_NAME_V2_BUFFER_SIZE;
constexpr auto uuid_buffer = gpumem::abi::NVML_DEVICE_UUID_V2_BUFFER_SIZE;
constexpr auto driver_version_buffer = gpumem::abi::NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE;
constexpr auto value_not_available = gpumem::abi::NVML_VALUE_NOT_AVAILABLE;
}  // namespace captured

#define NVML_NO_UNVERSIONED_FUNC_DEFS 1
#include <nvml.h>

namespace ours = gpumem::abi;
using gpumem::abi_test::abi_compatible;

static_assert(captured::name_buffer == NVML_DEVICE_NAME_V2_BUFFER_SIZE);
static_assert(captured::uuid_buffer == NVML_DEVICE_UUID_V2_BUFFER_SIZE);
static_assert(captured::driver_version_buffer == NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
static_assert(captured::value_not_available ==
              static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE));
static_assert(ours::kNvmlMemory_v2 == nvmlMemory_v2);
static_assert(ours::kNvmlProcessDetailList_v1 == nvmlProcessDetailList_v1);

// --- the structs and opaque handles, and NVIDIA's name for each ------------------------------
// clang-format off
#define GPUMEM_NVML_TYPES(X) \
  X(nvmlDevice_st)               \
  X(nvmlMemory_t)                \
  X(nvmlMemory_v2_t)             \
  X(nvmlProcessInfo_v1_t)        \
  X(nvmlProcessInfo_v2_t)        \
  X(nvmlProcessDetail_v1_t)      \
  X(nvmlProcessDetailList_v1_t)  \
  X(nvmlPciInfo_t)
// clang-format on
#define GPUMEM_COUNTERPART(T)                     \
  template <>                                     \
  struct gpumem::abi_test::counterpart<ours::T> { \
    using type = ::T;                             \
  };
GPUMEM_NVML_TYPES(GPUMEM_COUNTERPART)

static_assert(abi_compatible<ours::nvmlReturn_t, ::nvmlReturn_t>);
static_assert(abi_compatible<ours::nvmlDevice_t, ::nvmlDevice_t>);

// --- struct layouts: size, and each field's offset, size and type --------------------------
#define GPUMEM_FIELD(S, f)                                                       \
  static_assert(offsetof(ours::S, f) == offsetof(::S, f), #S "::" #f " offset"); \
  static_assert(sizeof(ours::S::f) == sizeof(::S::f), #S "::" #f " size");       \
  static_assert(abi_compatible<decltype(ours::S::f), decltype(::S::f)>, #S "::" #f " type");
#define GPUMEM_SIZE(S) static_assert(sizeof(ours::S) == sizeof(::S), #S " size");

GPUMEM_SIZE(nvmlMemory_t)
GPUMEM_FIELD(nvmlMemory_t, total)
GPUMEM_FIELD(nvmlMemory_t, free)
GPUMEM_FIELD(nvmlMemory_t, used)
GPUMEM_SIZE(nvmlMemory_v2_t)
GPUMEM_FIELD(nvmlMemory_v2_t, version)
GPUMEM_FIELD(nvmlMemory_v2_t, total)
GPUMEM_FIELD(nvmlMemory_v2_t, reserved)
GPUMEM_FIELD(nvmlMemory_v2_t, free)
GPUMEM_FIELD(nvmlMemory_v2_t, used)
GPUMEM_SIZE(nvmlProcessInfo_v1_t)
GPUMEM_FIELD(nvmlProcessInfo_v1_t, pid)
GPUMEM_FIELD(nvmlProcessInfo_v1_t, usedGpuMemory)
GPUMEM_SIZE(nvmlProcessInfo_v2_t)
GPUMEM_FIELD(nvmlProcessInfo_v2_t, pid)
GPUMEM_FIELD(nvmlProcessInfo_v2_t, usedGpuMemory)
GPUMEM_FIELD(nvmlProcessInfo_v2_t, gpuInstanceId)
GPUMEM_FIELD(nvmlProcessInfo_v2_t, computeInstanceId)
GPUMEM_SIZE(nvmlProcessDetail_v1_t)
GPUMEM_FIELD(nvmlProcessDetail_v1_t, pid)
GPUMEM_FIELD(nvmlProcessDetail_v1_t, usedGpuMemory)
GPUMEM_FIELD(nvmlProcessDetail_v1_t, gpuInstanceId)
GPUMEM_FIELD(nvmlProcessDetail_v1_t, computeInstanceId)
GPUMEM_FIELD(nvmlProcessDetail_v1_t, usedGpuCcProtectedMemory)
GPUMEM_SIZE(nvmlProcessDetailList_v1_t)
GPUMEM_FIELD(nvmlProcessDetailList_v1_t, version)
GPUMEM_FIELD(nvmlProcessDetailList_v1_t, mode)
GPUMEM_FIELD(nvmlProcessDetailList_v1_t, numProcArrayEntries)
GPUMEM_FIELD(nvmlProcessDetailList_v1_t, procArray)
GPUMEM_SIZE(nvmlPciInfo_t)
GPUMEM_FIELD(nvmlPciInfo_t, busIdLegacy)
GPUMEM_FIELD(nvmlPciInfo_t, domain)
GPUMEM_FIELD(nvmlPciInfo_t, bus)
GPUMEM_FIELD(nvmlPciInfo_t, device)
GPUMEM_FIELD(nvmlPciInfo_t, pciDeviceId)
GPUMEM_FIELD(nvmlPciInfo_t, pciSubSystemId)
GPUMEM_FIELD(nvmlPciInfo_t, busId)

// The process modes gpumem passes in nvmlProcessDetailList_v1_t::mode.
static_assert(NVML_PROCESS_MODE_COMPUTE == 0 && NVML_PROCESS_MODE_GRAPHICS == 1);

// --- enum values ----------------------------------------------------------------------------
// clang-format off
#define GPUMEM_NVML_CONSTANTS(X) \
  X(NVML_SUCCESS)                          \
  X(NVML_ERROR_UNINITIALIZED)              \
  X(NVML_ERROR_INVALID_ARGUMENT)           \
  X(NVML_ERROR_NOT_SUPPORTED)              \
  X(NVML_ERROR_NO_PERMISSION)              \
  X(NVML_ERROR_ALREADY_INITIALIZED)        \
  X(NVML_ERROR_NOT_FOUND)                  \
  X(NVML_ERROR_INSUFFICIENT_SIZE)          \
  X(NVML_ERROR_INSUFFICIENT_POWER)         \
  X(NVML_ERROR_DRIVER_NOT_LOADED)          \
  X(NVML_ERROR_TIMEOUT)                    \
  X(NVML_ERROR_IRQ_ISSUE)                  \
  X(NVML_ERROR_LIBRARY_NOT_FOUND)          \
  X(NVML_ERROR_FUNCTION_NOT_FOUND)         \
  X(NVML_ERROR_CORRUPTED_INFOROM)          \
  X(NVML_ERROR_GPU_IS_LOST)                \
  X(NVML_ERROR_RESET_REQUIRED)             \
  X(NVML_ERROR_OPERATING_SYSTEM)           \
  X(NVML_ERROR_LIB_RM_VERSION_MISMATCH)    \
  X(NVML_ERROR_IN_USE)                     \
  X(NVML_ERROR_MEMORY)                     \
  X(NVML_ERROR_NO_DATA)                    \
  X(NVML_ERROR_INSUFFICIENT_RESOURCES)     \
  X(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)  \
  X(NVML_ERROR_NOT_READY)                  \
  X(NVML_ERROR_GPU_NOT_FOUND)              \
  X(NVML_ERROR_UNKNOWN)
// clang-format on
#define GPUMEM_CONSTANT(name) \
  static_assert(static_cast<long long>(ours::name) == static_cast<long long>(::name), #name);
GPUMEM_NVML_CONSTANTS(GPUMEM_CONSTANT)

// --- function signatures, each against the symbol it is loaded as ---------------------------
#define GPUMEM_SIGNATURE(pfn, api, symbol)                      \
  static_assert(abi_compatible<ours::pfn, decltype(&::symbol)>, \
                "gpumem::abi::" #pfn " is not the signature of " #symbol);
GPUMEM_NVML_FUNCTIONS(GPUMEM_SIGNATURE)
#define GPUMEM_BUFFER_SIGNATURE(pfn, api, symbol)                                                  \
  static_assert(abi_compatible<ours::pfn,                                                          \
                               gpumem::abi_test::untyped_parameter<2, decltype(&::symbol)>::type>, \
                "gpumem::abi::" #pfn " is not the signature of " #symbol);
GPUMEM_NVML_BUFFER_FUNCTIONS(GPUMEM_BUFFER_SIGNATURE)

namespace gpumem::abi_test {
extern const std::pair<std::string_view, std::string_view> kCurrentNvml[];
namespace {
#include "nvml_inventory.inc"

#define GPUMEM_NAME(name) #name,
#define GPUMEM_FUNCTION(pfn, api, symbol) Function{#pfn, #api, #symbol},
#define GPUMEM_PFN(pfn, api, symbol) #pfn,
constexpr std::string_view kCheckedConstants[] = {
    GPUMEM_NVML_CONSTANTS(GPUMEM_NAME) "NVML_DEVICE_NAME_V2_BUFFER_SIZE",
    "NVML_DEVICE_UUID_V2_BUFFER_SIZE", "NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE",
    "NVML_VALUE_NOT_AVAILABLE"};
constexpr std::string_view kCheckedStructs[] = {GPUMEM_NVML_TYPES(GPUMEM_NAME)};
constexpr std::string_view kCheckedFunctions[] = {GPUMEM_NVML_FUNCTIONS(GPUMEM_PFN)
                                                      GPUMEM_NVML_BUFFER_FUNCTIONS(GPUMEM_PFN)};
constexpr Function kFunctions[] = {GPUMEM_NVML_FUNCTIONS(GPUMEM_FUNCTION)
                                       GPUMEM_NVML_BUFFER_FUNCTIONS(GPUMEM_FUNCTION)};
}  // namespace
}  // namespace gpumem::abi_test

int main() {
  using namespace gpumem::abi_test;
  Coverage coverage("abi_nvml_conformance");
  coverage.declared("function type", kDeclaredFunctions, kCheckedFunctions);
  coverage.declared("constant", kDeclaredConstants, kCheckedConstants);
  coverage.declared("struct", kDeclaredStructs, kCheckedStructs);
  std::size_t current = 0;
  while (!kCurrentNvml[current].first.empty()) ++current;
  coverage.loaded(kLoadedSymbols, kFunctions, {kCurrentNvml, current});
  return coverage.finish("nvml.h (NVML API " NVML_API_VERSION_STR ")");
}
