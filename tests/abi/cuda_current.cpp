// What cuda.h, compiled as an application compiles it, makes of each API name: the versioned
// symbol a program built against these headers calls (cuMemAlloc → cuMemAlloc_v2). gpumem must
// load that version; cuda_conformance.cpp checks it against what gpumem loads.
#include <cuda.h>
#include <cupti_callbacks.h>

#include <string_view>
#include <utility>

#include "coverage.hpp"
#include "cuda_functions.inc"

#define GPUMEM_CURRENT(pfn, api, symbol) {#api, GPUMEM_STRINGIFY(api)},
namespace gpumem::abi_test {
extern const std::pair<std::string_view, std::string_view> kCurrentCuda[];
const std::pair<std::string_view, std::string_view> kCurrentCuda[] = {
    GPUMEM_CUDA_FUNCTIONS(GPUMEM_CURRENT){}};
}  // namespace gpumem::abi_test
