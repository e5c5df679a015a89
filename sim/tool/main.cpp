// gpumem-sim: inspects and drives the simulated GPU, and runs scripted CUDA workloads.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/shared_state.hpp"
#include "show.hpp"
#include "workload.hpp"

namespace {

constexpr const char* kUsage =
    "usage: gpumem-sim show                 the state as JSON\n"
    "       gpumem-sim reset                recreate the state from GPUMEM_SIM_CONFIG\n"
    "       gpumem-sim lose N | recover N   mark NVML device N lost, or back\n"
    "       gpumem-sim workload 'SCRIPT'    run a CUDA program made of ';'-separated steps\n";

gpumem::sim::SharedState* open_state() {
  gpumem::sim::SharedState* state = gpumem::sim::SharedState::get();
  if (state == nullptr)
    std::fprintf(stderr, "gpumem-sim: %s\n", gpumem::sim::SharedState::open_error().c_str());
  return state;
}

int set_lost(const char* index_text, bool lost) {
  char* end = nullptr;
  const long index = std::strtol(index_text, &end, 10);
  gpumem::sim::SharedState* state = open_state();
  if (state == nullptr) return 1;
  if (*index_text == '\0' || *end != '\0' || index < 0 ||
      index >= static_cast<long>(state->device_count())) {
    std::fprintf(stderr, "gpumem-sim: no device %s (there are %u)\n", index_text,
                 state->device_count());
    return 2;
  }
  state->set_lost(static_cast<unsigned>(index), lost);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "show" && argc == 2) {
    gpumem::sim::SharedState* state = open_state();
    if (state == nullptr) return 1;
    std::printf("%s\n", gpumem::sim::tool::state_json(*state).c_str());
    return 0;
  }
  if (command == "reset" && argc == 2) {
    std::string error;
    if (!gpumem::sim::SharedState::reset(&error)) {
      std::fprintf(stderr, "gpumem-sim: %s\n", error.c_str());
      return 1;
    }
    return 0;
  }
  if ((command == "lose" || command == "recover") && argc == 3)
    return set_lost(argv[2], command == "lose");
  if (command == "workload" && argc == 3) return gpumem::sim::tool::run_workload(argv[2]);
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fputs(kUsage, stderr);
  return 2;
}
