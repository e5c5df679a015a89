// What nvml.h, compiled as an application compiles it, makes of each API name: the versioned
// symbol a program built against these headers calls (nvmlInit → nvmlInit_v2). gpumem must
// load that version; nvml_conformance.cpp checks it against what gpumem loads.
#include <nvml.h>

#include <string_view>
#include <utility>

#include "coverage.hpp"
#include "nvml_functions.inc"

#define GPUMEM_CURRENT(pfn, api, symbol) {#api, GPUMEM_STRINGIFY(api)},
namespace gpumem::abi_test {
extern const std::pair<std::string_view, std::string_view> kCurrentNvml[];
const std::pair<std::string_view, std::string_view> kCurrentNvml[] = {
    GPUMEM_NVML_FUNCTIONS(GPUMEM_CURRENT) GPUMEM_NVML_BUFFER_FUNCTIONS(GPUMEM_CURRENT){}};
}  // namespace gpumem::abi_test
