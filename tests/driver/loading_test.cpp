// Loading: nothing before first use, the named file and nothing else, and a clean exit even when
// queries run from static destructors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gpumem/gpumem.hpp"
#include "support/sim_configs.hpp"

namespace gpumem {
namespace {

using namespace gpumem::testing;

bool mapped_into_process(const std::string& file) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(file) != std::string::npos) return true;
  }
  return false;
}

TEST(Loading, LazyAndFromTheNamedFile) {
  SimGpu sim;
  const std::string nvml = sim_path("libnvidia-ml.so.1");
  EXPECT_FALSE(mapped_into_process(nvml));
  EXPECT_EQ(gpu_mem_get(0).total, kH200Total);
  EXPECT_TRUE(mapped_into_process(nvml));
}

TEST(Loading, DiagnosticsStartEmpty) {
  SimGpu sim;
  EXPECT_EQ(gpu_mem_get(1).total, kA100Total);
  EXPECT_TRUE(diagnostics().empty());
  EXPECT_EQ(last_diagnostic(), "");
}

struct QueriesAtExit {
  ~QueriesAtExit() {
    (void)gpu_mem_get(0);
    (void)gpu_mem_get_all();
    (void)device_processes(0);
  }
};

TEST(Loading, QueriesDuringStaticDestructionExitCleanly) {
  SimGpu sim;
  const pid_t child = ::fork();
  if (child == 0) {
    static QueriesAtExit at_exit;  // destroyed after the library's own statics were made
    static DeviceAllocation block = device_allocate(MiB, 0);
    (void)gpu_mem_get(0);
    std::exit(block.valid() && gpu_mem_get_bytes(0)->used == MiB ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace gpumem
