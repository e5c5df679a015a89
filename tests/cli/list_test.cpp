// `gpumem list` against the simulated GPUs, in each format.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "cli/command_runner.hpp"
#include "support/sim_gpu.hpp"
#include "text_width.hpp"

namespace gpumem::testing {
namespace {

TEST(List, TableShowsEveryDeviceInCudaOrderWithItsMemory) {
  SimGpu gpu;
  ::unsetenv("COLUMNS");  // into a file without COLUMNS: every column in full
  ::setenv("LC_ALL", "C", 1);
  const CommandResult result = run_command({gpumem_binary(), "list"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // CUDA ordinal 0 is NVML 1 (the H200) in this config.
  const auto h200 = result.out.find("  0     1  NVIDIA H200");
  const auto a100 = result.out.find("  1     0  NVIDIA A100-SXM4-40GB");
  ASSERT_NE(h200, std::string::npos) << result.out;
  ASSERT_NE(a100, std::string::npos) << result.out;
  EXPECT_LT(h200, a100);
  EXPECT_NE(result.out.find("GPU-bbbbbbbb-2222-4000-8000-000000000001  00000000:19:00.0"),
            std::string::npos);
  EXPECT_NE(result.out.find("140.4 GiB"), std::string::npos);  // 143771 MiB
  EXPECT_NE(result.out.find("542.0 MiB"), std::string::npos);
  EXPECT_NE(result.out.find("Driver 580.95.05"), std::string::npos);
  EXPECT_NE(result.out.find("No processes use GPU memory."), std::string::npos);
  // Each device's used memory as a bar, 20 cells, in ASCII outside a UTF-8 locale, uncoloured.
  EXPECT_NE(result.out.find("  542.0 MiB  [                    ]   0%\n"), std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find('\033'), std::string::npos);
}

TEST(List, FitsTheWidthGivenOrColumnsAndWideShowsAll) {
  SimGpu gpu;
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 40GiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  ::setenv("LC_ALL", "C.UTF-8", 1);
  ::setenv("COLUMNS", "80", 1);
  const CommandResult narrow = run_command({gpumem_binary(), "list"});
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  EXPECT_EQ(narrow.out.find("GPU-bbbbbbbb"), std::string::npos) << narrow.out;
  // 40 GiB of 143771 MiB: 28.5 %, 29 % rounded up, in eighths of a cell.
  EXPECT_NE(narrow.out.find("  0  NVIDIA H200            140.4 GiB  40.0 GiB  99.9 GiB  [█"),
            std::string::npos)
      << narrow.out;
  EXPECT_NE(narrow.out.find("]  29%\n"), std::string::npos) << narrow.out;
  const CommandResult forced = run_command({gpumem_binary(), "list", "--width", "120"});
  EXPECT_NE(forced.out.find("GPU-bbbbbbbb  "), std::string::npos) << forced.out;
  EXPECT_EQ(forced.out.find("00000000:19:00.0"), std::string::npos) << forced.out;
  const CommandResult wide = run_command({gpumem_binary(), "list", "--wide"});
  EXPECT_NE(wide.out.find("GPU-bbbbbbbb-2222-4000-8000-000000000001  00000000:19:00.0"),
            std::string::npos)
      << wide.out;
  EXPECT_NE(wide.out.find("[█████▊ "), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("]  29%\n"), std::string::npos) << wide.out;
  // JSON and CSV do not depend on the width.
  const std::string csv = run_command({gpumem_binary(), "list", "--csv"}).out;
  const std::string json = run_command({gpumem_binary(), "list", "--json"}).out;
  ::unsetenv("COLUMNS");
  EXPECT_EQ(run_command({gpumem_binary(), "list", "--csv", "--wide"}).out, csv);
  EXPECT_EQ(run_command({gpumem_binary(), "list", "--json"}).out, json);
  EXPECT_NE(csv.find(",GPU-bbbbbbbb-2222-4000-8000-000000000001,00000000:19:00.0,"),
            std::string::npos)
      << csv;
  for (const CommandResult* result : {&narrow, &forced}) {
    std::istringstream lines(result->out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(gpumem::cli::display_width(line), result == &narrow ? 80u : 120u) << line;
    }
  }
}

TEST(List, NoProcessNameCanDriveTheTerminal) {
  SimGpu gpu;
  // The kernel takes a process's name from the file it runs: here one with an escape sequence.
  const std::string name = "evil\033[2Jx";
  const std::string program = temporary_folder() + "/" + name;
  std::filesystem::create_symlink(sim_tool(), program);
  BackgroundCommand holder({program, "workload", "alloc a 3MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const CommandResult table = run_command({gpumem_binary(), "list"});
  EXPECT_EQ(table.out.find('\033'), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(std::to_string(holder.pid()) + "  evil\\x1b[2Jx"), std::string::npos)
      << table.out;
  const CommandResult watch = run_command({gpumem_binary(), "watch", "--count", "1"});
  EXPECT_EQ(watch.out.find('\033'), std::string::npos) << watch.out;
  EXPECT_NE(watch.out.find(" evil\\x1b[2Jx 3.0 MiB"), std::string::npos) << watch.out;
  // JSON and CSV say what the kernel says.
  const auto document = nlohmann::json::parse(run_command({gpumem_binary(), "list", "--json"}).out);
  EXPECT_EQ(document["devices"][0]["processes"][0]["name"], name);
}

TEST(List, JsonOfAProcessNameThatIsNotUtf8StillPrints) {
  SimGpu gpu;
  // A file name is bytes: a process run from one that is not UTF-8 has such a name.
  const std::string name = "bad\xff\xfename";
  const std::string program = temporary_folder() + "/" + name;
  std::filesystem::create_symlink(sim_tool(), program);
  BackgroundCommand holder({program, "workload", "alloc a 3MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const CommandResult result = run_command({gpumem_binary(), "list", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto document = nlohmann::json::parse(result.out);
  // The bytes that are not UTF-8 become U+FFFD; the rest and the figures are kept.
  EXPECT_EQ(document["devices"][0]["processes"][0]["name"], "bad\xef\xbf\xbd\xef\xbf\xbdname");
  EXPECT_EQ(document["devices"][0]["processes"][0]["used_bytes"], 3 * 1024 * 1024);
}

TEST(List, RejectsABadWidth) {
  SimGpu gpu;
  for (const std::vector<std::string>& arguments : {std::vector<std::string>{"--width", "10"},
                                                    {"--width", "wide"},
                                                    {"--wide", "--width", "100"}}) {
    std::vector<std::string> command = {gpumem_binary(), "list"};
    command.insert(command.end(), arguments.begin(), arguments.end());
    const CommandResult result = run_command(command);
    EXPECT_EQ(result.exit_code, 2) << arguments[1];
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.out, "");
  }
}

TEST(List, JsonHoldsTheDevicesAndTheProcessesWithTheirBytes) {
  SimGpu gpu;
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 100MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const CommandResult result = run_command({gpumem_binary(), "list", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto document = nlohmann::json::parse(result.out);
  EXPECT_EQ(document["schema"], "gpumem.list/1");
  EXPECT_EQ(document["driver_version"], "580.95.05");
  const auto& devices = document["devices"];
  ASSERT_EQ(devices.size(), 2u);
  const auto& h200 = devices[0];
  EXPECT_EQ(h200["device"], 0);
  EXPECT_EQ(h200["nvml_index"], 1);
  EXPECT_EQ(h200["name"], "NVIDIA H200");
  EXPECT_EQ(h200["uuid"], "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_EQ(h200["pci_bus_id"], "00000000:19:00.0");
  EXPECT_EQ(h200["memory"]["total_bytes"], 143771 * MiB);
  EXPECT_EQ(h200["memory"]["reserved_bytes"], 542 * MiB);
  EXPECT_EQ(h200["memory"]["used_bytes"], 100 * MiB);
  EXPECT_EQ(h200["memory"]["free_bytes"], (143771 - 542 - 100) * MiB);
  ASSERT_EQ(h200["processes"].size(), 1u);
  EXPECT_EQ(h200["processes"][0]["pid"], holder.pid());
  EXPECT_EQ(h200["processes"][0]["name"], "gpumem-sim");
  EXPECT_EQ(h200["processes"][0]["used_bytes"], 100 * MiB);
  EXPECT_EQ(devices[1]["memory"]["used_bytes"], 0u);
  EXPECT_TRUE(devices[1]["processes"].empty());
}

TEST(List, CsvHasOneRowPerDeviceAndProcess) {
  SimGpu gpu;
  BackgroundCommand holder({sim_tool(), "workload", "alloc a 3MiB; print ready; sleep 30s"});
  ASSERT_TRUE(holder.wait_for_output("ready"));
  const CommandResult result = run_command({gpumem_binary(), "list", "--csv"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string pid = std::to_string(holder.pid());
  EXPECT_EQ(result.out,
            "device,nvml_index,name,uuid,pci_bus_id,total_bytes,used_bytes,free_bytes,"
            "reserved_bytes,pid,process_name,process_used_bytes\n"
            "0,1,NVIDIA H200,GPU-bbbbbbbb-2222-4000-8000-000000000001,00000000:19:00.0," +
                std::to_string(143771 * MiB) + "," + std::to_string(3 * MiB) + "," +
                std::to_string((143771 - 542 - 3) * MiB) + "," + std::to_string(542 * MiB) + "," +
                pid + ",gpumem-sim," + std::to_string(3 * MiB) +
                "\n"
                "1,0,NVIDIA A100-SXM4-40GB,GPU-aaaaaaaa-1111-4000-8000-000000000000,"
                "00000000:3B:00.0," +
                std::to_string(40960 * MiB) + ",0," + std::to_string((40960 - 256) * MiB) + "," +
                std::to_string(256 * MiB) + ",,,\n");
}

TEST(List, WithoutAGpuSaysWhyAndListsNothing) {
  SimGpu gpu;
  ::setenv("GPUMEM_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  ::setenv("GPUMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  const CommandResult table = run_command({gpumem_binary(), "list"});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_EQ(table.out, "");
  EXPECT_NE(table.err.find("gpumem: no GPU found: "), std::string::npos) << table.err;
  const CommandResult json = run_command({gpumem_binary(), "list", "--json"});
  EXPECT_EQ(json.exit_code, 0);
  const auto document = nlohmann::json::parse(json.out);
  EXPECT_TRUE(document["devices"].empty());
  EXPECT_FALSE(document["diagnostics"].empty());
}

TEST(List, RejectsJsonTogetherWithCsv) {
  SimGpu gpu;
  const CommandResult result = run_command({gpumem_binary(), "list", "--json", "--csv"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

}  // namespace
}  // namespace gpumem::testing
