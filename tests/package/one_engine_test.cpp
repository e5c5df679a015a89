// One process holding gpumem three ways: this program's C++ code (linked to libgpumem.so), the
// Python extension (imported by an embedded interpreter) and the `gpumem run` injection library
// (loaded by the simulated driver at cuInit through CUDA_INJECTION64_PATH, as the real driver
// does). They must share one engine: CUPTI takes one subscriber per process (a second
// cuptiSubscribe answers MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), so with an engine each, whichever
// subscribed second would fall back to sampling; and a counter of one must see what another
// allocates.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pybind11/embed.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gpumem/gpumem.hpp"
#include "gpumem/internal/run_counters.hpp"
#include "gpumem/internal/run_engine.hpp"

namespace py = pybind11;

namespace {

constexpr std::int64_t kAllocation = std::int64_t{96} << 20;

void set(const char* name, const std::string& value) {
  ::setenv(name, value.c_str(), 1);
}

// The counters file the engine created (named by its /proc path), mapped again for reading, as a
// second process of the run would see it; nullptr if it cannot be.
const gpumem::run::RunCounters* map_counters(const char* path) {
  if (path == nullptr) return nullptr;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* memory = ::mmap(nullptr, sizeof(gpumem::run::RunCounters), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  return memory == MAP_FAILED ? nullptr : static_cast<const gpumem::run::RunCounters*>(memory);
}

}  // namespace

TEST(OneEngine, CppPythonAndTheInjectionLibraryShareOneSubscriptionAndOneSetOfCounters) {
  const std::filesystem::path work =
      std::filesystem::path(GPUMEM_TEST_WORK_DIR) / ("one_engine." + std::to_string(::getpid()));
  std::filesystem::create_directories(work);
  set("GPUMEM_NVML_LIBRARY", GPUMEM_SIM_DIR "/libnvidia-ml.so.1");
  set("GPUMEM_CUDA_LIBRARY", GPUMEM_SIM_DIR "/libcuda.so.1");
  set("GPUMEM_CUPTI_LIBRARY", GPUMEM_SIM_DIR "/libcupti.so.13");
  set("GPUMEM_SIM_STATE", (work / "sim.state").string());
  set("GPUMEM_SIM_CONFIG", R"({"devices":[{"name":"NVIDIA H200","total_mib":143771}]})");

  // As `gpumem run` does, with its engine: counters shared with the injection library, which the
  // driver loads, named in the environment the engine gives the command.
  gpumem::run::Engine engine({}, /*keep_timeline=*/false);
  std::string error;
  ASSERT_TRUE(engine.count_exactly(GPUMEM_INJECT_LIBRARY, &error)) << error;
  for (const std::string& entry : engine.child_environment(nullptr)) {
    const std::size_t equals = entry.find('=');
    set(entry.substr(0, equals).c_str(), entry.substr(equals + 1));
  }
  const gpumem::run::RunCounters* counters =
      map_counters(std::getenv(gpumem::run::kCountersVariable));
  ASSERT_NE(counters, nullptr);

  // cuInit: the driver loads the injection library, which subscribes to CUPTI first.
  ASSERT_TRUE(gpumem::preload());
  EXPECT_EQ(counters->processes_attached.load(), 1);
  EXPECT_EQ(counters->processes_exact.load(), 1) << counters->fallback_reason;
  EXPECT_EQ(counters->processes_fallback.load(), 0) << counters->fallback_reason;

  // This program's counter: exact too, so on the injection library's subscription.
  gpumem::PeakCounter cpp(0, gpumem::Source::exact);
  EXPECT_EQ(cpp.source(), gpumem::Source::exact) << gpumem::exact_source_status();

  py::scoped_interpreter interpreter;
  py::module_::import("sys").attr("path").attr("insert")(0, GPUMEM_PYTHON_DIR);
  py::module_ gpumem_python = py::module_::import("gpumem");
  py::module_ native = py::module_::import("gpumem._native");
  py::object trace = gpumem_python.attr("GPUMemTrace")(
      py::arg("silent") = true, py::arg("device") = 0, py::arg("source") = "exact");
  EXPECT_EQ(trace.attr("data_bytes")().attr("source").cast<std::string>(), "exact");

  // An allocation made through Python, seen by all three.
  py::object allocation = native.attr("device_allocate")(kAllocation, 0);
  ASSERT_TRUE(allocation.attr("valid").cast<bool>());

  const gpumem::PeakReading reading = cpp.read();
  EXPECT_EQ(reading.source, gpumem::Source::exact);
  EXPECT_EQ(reading.peak_bytes - reading.start_bytes, kAllocation);
  EXPECT_EQ(reading.current_bytes - reading.start_bytes, kAllocation);

  py::object bytes = trace.attr("data_bytes")();
  EXPECT_EQ(bytes.attr("source").cast<std::string>(), "exact");
  EXPECT_EQ(bytes.attr("peak").cast<std::int64_t>() - bytes.attr("start").cast<std::int64_t>(),
            kAllocation);

  // The one device's events land in the first device slot the injection library claims.
  EXPECT_EQ(counters->devices[0].current.load(), kAllocation);
  EXPECT_EQ(counters->devices[0].peak.load(), kAllocation);

  // Freed through Python: the C++ counter's level falls back, its peak stays.
  allocation.attr("reset")();
  const gpumem::PeakReading after = cpp.read();
  EXPECT_EQ(after.current_bytes, reading.start_bytes);
  EXPECT_EQ(after.peak_bytes, reading.peak_bytes);
  EXPECT_EQ(counters->devices[0].current.load(), 0);
  trace = py::none();
  allocation = py::none();
}
