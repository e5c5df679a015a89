// fastai.utils.mem's documented usage examples, in C++ on gpumem: queries, Examples 1-3, the
// context-manager and decorator forms. `some_code` keeps 10 MiB and briefly needs 5 MiB more, so
// every report shows what an exact peak sees: `△Used Peaked MB:     10      5`.
#include <gpumem/gpumem.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

std::vector<gpumem::DeviceAllocation> kept;  // what some_code leaves allocated

void some_code() {
  kept.push_back(gpumem::device_allocate(10 * MiB));
  auto transient = gpumem::device_allocate(5 * MiB);  // freed on return: a 5 MiB blip
}

struct Model {
  int forward() {
    GPUMEM_TRACE_FUNCTION();
    some_code();
    return 1;
  }
};

int some_func() {
  GPUMEM_TRACE_FUNCTION();
  some_code();
  return 1;
}

void print_queries() {
  std::printf("gpu_mem_get_all():\n");
  int id = 0;
  for (const auto& mem : gpumem::gpu_mem_get_all()) {
    std::printf("  %d: GPUMemory(total=%lld, free=%lld, used=%lld)\n", id++,
                static_cast<long long>(mem.total), static_cast<long long>(mem.free),
                static_cast<long long>(mem.used));
  }
  const auto best = gpumem::gpu_with_max_free_mem();
  if (best.device) {
    std::printf("gpu_with_max_free_mem(): (%d, %lld)\n", *best.device,
                static_cast<long long>(best.free));
  } else {
    std::printf("gpu_with_max_free_mem(): (None, 0)\n");
  }
  std::printf("preload(): %s\n", gpumem::preload() ? "CUDA context created" : "no GPU");
}

}  // namespace

int main() {
  print_queries();
  if (gpumem::device_count() == 0) {
    std::printf("No GPU: nothing to trace.\n");
    for (const auto& why : gpumem::diagnostics()) std::printf("  %s\n", why.c_str());
    return 0;
  }

  std::printf("\nExample 1: report() and data()\n");
  gpumem::GPUMemTrace mtrace;
  std::printf("  measures: %s\n", gpumem::describe(mtrace.data_bytes().reading).c_str());
  some_code();
  mtrace.report();
  auto [delta_used, delta_peaked] = mtrace.data();
  some_code();
  mtrace.report("2nd run of some_code()");
  std::tie(delta_used, delta_peaked) = mtrace.data();
  std::printf("  data() -> (%lld, %lld)\n", static_cast<long long>(delta_used),
              static_cast<long long>(delta_peaked));

  std::printf("\nExample 2: reset() before each run\n");
  for (int i = 0; i < 3; ++i) {
    mtrace.reset();
    some_code();
    mtrace.report("i=" + std::to_string(i));
  }

  std::printf("\nExample 3: report_n_reset()\n");
  mtrace.reset();
  for (int i = 0; i < 3; ++i) {
    some_code();
    mtrace.report_n_reset("i=" + std::to_string(i));
  }

  std::printf("\nContext and sub-context\n");
  gpumem::GPUMemTrace foobar{false, "foobar"};
  foobar.report("1st try");
  some_code();
  foobar.report("2nd try");

  std::printf("\nContext manager (reports on scope exit)\n");
  {
    gpumem::TraceScope scope{"some context"};
    some_code();
  }

  std::printf("\nDecorator forms\n");
  some_func();
  Model{}.forward();
  auto traced_code = gpumem::traced("traced lambda", [] { some_code(); });
  traced_code();

  kept.clear();
  return 0;
}
