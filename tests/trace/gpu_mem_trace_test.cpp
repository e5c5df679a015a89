// GPUMemTrace on the simulated GPU: the seed's examples with the numbers the simulated
// allocations imply, its context-manager and decorator forms, and the fixed bugs.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <vector>

#include "gpumem/allocate.hpp"
#include "gpumem/cache.hpp"
#include "gpumem/trace.hpp"
#include "support/sim_gpu.hpp"
#include "trace/report_prefix.hpp"

namespace gpumem {
namespace {

using testing::MiB;
using testing::SimGpu;

using testing::kPrefix;

// The seed's some_code(): keeps 10 MiB and peaks 5 MiB above that.
std::vector<DeviceAllocation> kept;
void some_code() {
  kept.push_back(device_allocate(10 * MiB, 0));
  DeviceAllocation spike = device_allocate(5 * MiB, 0);
}

struct Lines {
  std::vector<std::string> lines;
  ReportSink sink() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

TraceOptions options_with(Lines& lines, std::optional<std::string> ctx = std::nullopt) {
  TraceOptions options;
  options.ctx = std::move(ctx);
  options.sink = lines.sink();
  options.device = 0;
  return options;
}

TEST(GPUMemTrace, Example1ReportAndData) {
  SimGpu gpu;
  kept.clear();
  ::testing::internal::CaptureStdout();
  GPUMemTrace mtrace;
  some_code();
  mtrace.report();
  EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{10, 5}));
  some_code();
  mtrace.report("2nd run of some_code()");
  EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{20, 5}));
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            kPrefix + "     10      5\n" + kPrefix + "     20      5 (2nd run of some_code())\n");
  EXPECT_EQ(mtrace.source(), Source::exact);
}

TEST(GPUMemTrace, Example2ResetInALoop) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  GPUMemTrace mtrace(options_with(out));
  for (int i = 0; i < 3; ++i) {
    mtrace.reset();
    some_code();
    mtrace.report("i=" + std::to_string(i));
  }
  EXPECT_EQ(out.lines, (std::vector<std::string>{kPrefix + "     10      5 (i=0)",
                                                 kPrefix + "     10      5 (i=1)",
                                                 kPrefix + "     10      5 (i=2)"}));
}

TEST(GPUMemTrace, Example3ReportAndReset) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  GPUMemTrace mtrace(options_with(out, "loop"));
  mtrace.reset();
  for (int i = 0; i < 3; ++i) {
    some_code();
    mtrace.report_n_reset("i=" + std::to_string(i));
  }
  EXPECT_EQ(out.lines, (std::vector<std::string>{kPrefix + "     10      5 (loop: i=0)",
                                                 kPrefix + "     10      5 (loop: i=1)",
                                                 kPrefix + "     10      5 (loop: i=2)"}));
}

TEST(GPUMemTrace, StopFreezesAndStartRebaselines) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  GPUMemTrace mtrace(options_with(out));
  EXPECT_TRUE(mtrace.is_running());
  some_code();
  mtrace.stop();
  EXPECT_FALSE(mtrace.is_running());
  some_code();  // after stop: not seen
  EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{10, 5}));
  const TraceBytes bytes = mtrace.data_bytes();
  EXPECT_EQ(bytes.source, Source::exact);
  EXPECT_EQ(bytes.start, 0);
  EXPECT_EQ(bytes.end, static_cast<std::int64_t>(10 * MiB));
  EXPECT_EQ(bytes.peak, static_cast<std::int64_t>(15 * MiB));
  EXPECT_EQ(bytes.delta_used, static_cast<std::int64_t>(10 * MiB));
  EXPECT_EQ(bytes.delta_peaked, static_cast<std::int64_t>(5 * MiB));

  mtrace.start();  // 20 MiB are in use now: the new baseline
  EXPECT_TRUE(mtrace.is_running());
  EXPECT_EQ(mtrace.data_bytes().start, static_cast<std::int64_t>(20 * MiB));
  EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{0, 0}));
  kept.clear();
  EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{-20, 0}));
  mtrace.report();
  EXPECT_EQ(out.lines.back(), kPrefix + "    -20      0");
}

TEST(GPUMemTrace, SilentWorks) {
  SimGpu gpu;
  Lines out;
  TraceOptions options = options_with(out, "quiet");
  options.silent = true;
  GPUMemTrace mtrace(options);
  mtrace.report();
  EXPECT_TRUE(out.lines.empty());
  mtrace.silent(false);
  EXPECT_FALSE(mtrace.is_silent());
  mtrace.report();
  mtrace.silent();
  mtrace.report();
  mtrace.report_n_reset();
  EXPECT_EQ(out.lines, (std::vector<std::string>{kPrefix + "      0      0 (quiet)"}));
}

TEST(GPUMemTrace, ReprHasNoContext) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  GPUMemTrace mtrace(options_with(out, "ctx"));
  some_code();
  EXPECT_EQ(mtrace.repr(), kPrefix + "     10      5");
}

TEST(GPUMemTrace, CacheHooksRunAtEndpointsOnly) {
  SimGpu gpu;
  DeviceAllocation cached;
  int released = 0;
  const HookId hook = add_cache_release_hook([&] {
    ++released;
    cached.reset();
  });
  Lines out;
  {
    GPUMemTrace mtrace(options_with(out));
    EXPECT_EQ(released, 1);  // at start
    cached = device_allocate(4 * MiB, 0);
    EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{0, 4}));  // the cache went
    EXPECT_EQ(released, 2);
  }
  EXPECT_EQ(released, 2);          // the destructor released nothing
  EXPECT_TRUE(out.lines.empty());  // and reported nothing

  TraceOptions keep_cache = options_with(out);
  keep_cache.no_cache = false;
  GPUMemTrace with_cache(keep_cache);
  cached = device_allocate(4 * MiB, 0);
  EXPECT_EQ(with_cache.data(), (std::pair<std::int64_t, std::int64_t>{4, 0}));
  EXPECT_EQ(released, 2);
  remove_cache_release_hook(hook);
}

TEST(TraceScope, ReportsOnExit) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  {
    TraceScope scope(options_with(out, "some_func"));
    some_code();
  }
  EXPECT_EQ(out.lines, (std::vector<std::string>{kPrefix + "     10      5 (some_func: exit)"}));
}

TEST(TraceScope, DefaultPrintsToStdout) {
  SimGpu gpu;
  ::testing::internal::CaptureStdout();
  { TraceScope scope; }
  { TraceScope scope("some context"); }
  { TraceScope quiet("quiet", /*on_exit_report=*/false); }
  EXPECT_EQ(
      ::testing::internal::GetCapturedStdout(),
      kPrefix + "      0      0 (exit)\n" + kPrefix + "      0      0 (some context: exit)\n");
}

TEST(TraceScope, ReportsWhenLeftByAnException) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  try {
    TraceScope scope(options_with(out, "failing"));
    some_code();
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(out.lines, (std::vector<std::string>{kPrefix + "     10      5 (failing: exit)"}));
}

TEST(TraceScope, WithoutExitReportTheDataStaysReadable) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  TraceOptions options = options_with(out, "some_func");
  options.on_exit_report = false;
  std::optional<TraceScope> scope;
  scope.emplace(options);
  some_code();
  GPUMemTrace& trace = scope->trace();
  trace.stop();
  trace.report("measured in ctx");
  EXPECT_EQ(out.lines,
            (std::vector<std::string>{kPrefix + "     10      5 (some_func: measured in ctx)"}));
  scope.reset();
  EXPECT_EQ(out.lines.size(), 1u);
}

struct Model {
  int forward(int x) {
    GPUMEM_TRACE_FUNCTION();
    some_code();
    return x + 1;
  }
};

int traced_free_function() {
  GPUMEM_TRACE_FUNCTION();
  return 7;
}

TEST(TraceDecorator, NamesTheEnclosingMethod) {
  SimGpu gpu;
  kept.clear();
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(Model{}.forward(1), 2);
  EXPECT_EQ(traced_free_function(), 7);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            kPrefix + "     10      5 (Model::forward: exit)\n" + kPrefix +
                "      0      0 (gpumem::traced_free_function: exit)\n");
}

TEST(TraceDecorator, WrapsAnyCallable) {
  SimGpu gpu;
  kept.clear();
  ::testing::internal::CaptureStdout();
  auto step = traced("train_step", [](int steps) {
    for (int i = 0; i < steps; ++i) some_code();
    return steps * 2;
  });
  EXPECT_EQ(step(2), 4);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            kPrefix + "     20      5 (train_step: exit)\n");
}

TEST(GPUMemTrace, SampledSourceOnRequest) {
  SimGpu gpu;
  kept.clear();
  Lines out;
  TraceOptions options = options_with(out);
  options.source = Source::sampled;
  GPUMemTrace mtrace(options);
  EXPECT_EQ(mtrace.source(), Source::sampled);
  kept.push_back(device_allocate(3 * MiB, 0));
  EXPECT_EQ(mtrace.data(), (std::pair<std::int64_t, std::int64_t>{3, 0}));
}

}  // namespace
}  // namespace gpumem
