// PyTorch's memory snapshots through the `gpumem` command: snapshots Python's pickle wrote from
// dicts built to PyTorch's documented schema (tests/cli/torch_snapshots.py), in each form and
// protocol, shown and diffed; gpumem's documents written as snapshots and read by PyTorch's own
// `_memory_viz` (Debian's python3-torch); a hostile pickle refused in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/command_runner.hpp"

namespace gpumem::testing {
namespace {

const std::string kMemoryViz = "/usr/lib/python3/dist-packages/torch/cuda/_memory_viz.py";

CommandResult helper(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), {"python3", GPUMEM_TORCH_SNAPSHOTS});
  return run_command(arguments);
}

// A folder holding before.pickle, after.pickle, older.pickle and p2…p5.pickle.
std::string snapshots() {
  const std::string folder = temporary_folder();
  const CommandResult made = helper({"make", folder});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return folder;
}

CommandResult gpumem(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), gpumem_binary());
  return run_command(arguments);
}

const std::string kBeforeTable =
    "peak of scope torch snapshot on GPU 0, at 0 ms\n"
    "level 1.0 GiB: 768.0 MiB in 2 live blocks from 2 stacks, 256.0 MiB held without a block\n"
    "\n"
    "    BYTES  SHARE  BLOCKS  ALLOCATED BY                         CALLED FROM\n"
    "512.0 MiB  50.0%       1  load_weights (/home/me/train.py:12)  main\n"
    "256.0 MiB  25.0%       1  forward (/home/me/train.py:30)       main\n"
    "256.0 MiB  25.0%       -  (held without a block)               context, pool reservations, "
    "rounding\n";

TEST(TorchSnapshotCommand, EachFormAndProtocolShowsTheLiveBlocksByTheirPythonFrames) {
  const std::string folder = snapshots();
  for (const char* name : {"before", "older", "p2", "p3", "p4", "p5"}) {
    const CommandResult shown = gpumem({"attribution", folder + "/" + name + ".pickle", "--wide"});
    EXPECT_EQ(shown.exit_code, 0) << name << shown.err;
    EXPECT_EQ(shown.err, "") << name;
    EXPECT_EQ(shown.out, kBeforeTable) << name;
  }
}

TEST(TorchSnapshotCommand, DiffOfTwoSnapshotsShowsTheStacksThatGrew) {
  const std::string folder = snapshots();
  const CommandResult diff =
      gpumem({"diff", folder + "/before.pickle", folder + "/after.pickle", "--wide"});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_EQ(
      diff.out,
      folder + "/before.pickle → " + folder + "/after.pickle (torch snapshot)\n" +
          "\n"
          "PEAK PER DEVICE   BEFORE    AFTER      CHANGE       %  MATCHED\n"
          "GPU 0            1.0 GiB  1.5 GiB  +512.0 MiB  +50.0%  by ordinal\n"
          "\n"
          "STACK AT THE PEAK                  BEFORE      AFTER      CHANGE        %  CALLED FROM\n"
          "forward (/home/me/train.py:30)  256.0 MiB  768.0 MiB  +512.0 MiB  +200.0%  main\n"
          "1 stack held the same at both peaks.\n");
}

TEST(TorchSnapshotCommand, TheHtmlReportOfASnapshotEmbedsItsBlocks) {
  const std::string folder = snapshots();
  const CommandResult html =
      gpumem({"attribution", folder + "/after.pickle", "--html", folder + "/a.html"});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  const std::string page = read_file(folder + "/a.html");
  EXPECT_NE(page.find("\"scope\":\"torch snapshot\""), std::string::npos);
  EXPECT_NE(page.find("\"live_bytes\":1342177280"), std::string::npos);
}

TEST(TorchSnapshotCommand, AHostilePickleIsOneLineAndStatusOne) {
  const std::string folder = temporary_folder();
  {
    std::ofstream evil(folder + "/evil.pickle", std::ios::binary);
    evil << std::string(
        "\x80\x02"
        "cposix\nsystem\n(X\x02\x00\x00\x00idtR.",
        27);
  }
  const CommandResult shown = gpumem({"attribution", folder + "/evil.pickle"});
  EXPECT_EQ(shown.exit_code, 1);
  EXPECT_EQ(shown.out, "");
  EXPECT_EQ(shown.err, "gpumem attribution: " + folder +
                           "/evil.pickle: PyTorch snapshot: byte 2: GLOBAL (0x63) would import "
                           "or call Python code: refused (a memory snapshot holds only dicts, "
                           "lists, strings and numbers)\n");
  const CommandResult diff = gpumem({"diff", folder + "/evil.pickle", folder + "/evil.pickle"});
  EXPECT_EQ(diff.exit_code, 1);
  EXPECT_EQ(diff.err.find("gpumem diff: " + folder +
                          "/evil.pickle: PyTorch snapshot: byte 2: "
                          "GLOBAL (0x63)"),
            0u)
      << diff.err;
}

// A gpumem document (tests/docs/snap.json) as PyTorch 1.13's list of segments, read by Debian's
// python3-torch `_memory_viz`: its stats, and the flame graph lines of `memory`, `segments` and
// `compare` (the lines flamegraph.pl would draw).
TEST(TorchSnapshotCommand, PyTorchsMemoryVizReadsTheOlderFormGpumemWrites) {
  if (!std::filesystem::exists(kMemoryViz))
    GTEST_SKIP() << kMemoryViz << " (Debian's python3-torch) is not installed";
  const std::string folder = temporary_folder();
  const std::string viz = folder + "/viz.pickle";
  const CommandResult written = gpumem({"attribution", std::string(GPUMEM_TEST_DOCS) + "/snap.json",
                                        "--torch-snapshot", viz, "--torch-form", "list"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const CommandResult stats = helper({"viz", "stats", viz});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(stats.out, "{'active_allocated': 200.0MiB, 'segments': 6, 'total_size': 200.0MiB}\n");
  const CommandResult memory = helper({"viz", "memory", viz});
  EXPECT_EQ(memory.exit_code, 0) << memory.err;
  EXPECT_EQ(memory.out,
            "stream_0;active_allocated;train.cpp:7:main;train.cpp:42:train_step 62914560\n"
            "stream_0;active_allocated;train.cpp:7:main;weights.cpp:99:load_weights 52428800\n"
            "stream_0;active_allocated;train.cpp:7:main;train.cpp:42:train_step 41943040\n"
            "stream_0;active_allocated;train.cpp:7:main;weights.cpp:99:load_weights;weights.cpp:12:"
            "loader 20971520\n"
            "stream_0;active_allocated;<non-python> 10485760\n"
            "stream_0;active_allocated;:0:<gpumem: held without a block> 20971520\n");
  const CommandResult segments = helper({"viz", "segments", viz});
  EXPECT_EQ(segments.exit_code, 0) << segments.err;
  EXPECT_EQ(
      segments.out,
      "stream_0;seg_139637976727552;active_allocated;train.cpp:7:main;train.cpp:42:train_step "
      "62914560\n"
      "stream_0;seg_139638245163008;active_allocated;train.cpp:7:main;weights.cpp:99:load_weights "
      "52428800\n"
      "stream_0;seg_139638513598464;active_allocated;train.cpp:7:main;train.cpp:42:train_step "
      "41943040\n"
      "stream_0;seg_139638782033920;active_allocated;train.cpp:7:main;weights.cpp:99:load_weights;"
      "weights.cpp:12:loader 20971520\n"
      "stream_0;seg_139639050469376;active_allocated;<non-python> 10485760\n"
      "stream_0;seg_139639060955136;active_allocated;:0:<gpumem: held without a block> 20971520\n");
  const std::string later = folder + "/later.pickle";
  ASSERT_EQ(gpumem({"attribution", std::string(GPUMEM_TEST_DOCS) + "/snap-later.json",
                    "--torch-snapshot", later, "--torch-form", "list"})
                .exit_code,
            0);
  const CommandResult compare = helper({"viz", "compare", viz, later});
  EXPECT_EQ(compare.exit_code, 0) << compare.err;
  EXPECT_EQ(compare.out,
            "only_before = [139638513598464, 139638782033920, 139637976727552, 139638245163008]\n"
            "only_after = [139637976727552, 139638782033920, 139638245163008, 139638513598464]\n"
            "only_before;stream_0;seg_139637976727552;active_allocated;train.cpp:7:main;train.cpp:"
            "42:train_step 62914560\n"
            "only_before;stream_0;seg_139638245163008;active_allocated;train.cpp:7:main;weights."
            "cpp:99:load_weights 52428800\n"
            "only_before;stream_0;seg_139638513598464;active_allocated;train.cpp:7:main;train.cpp:"
            "42:train_step 41943040\n"
            "only_before;stream_0;seg_139638782033920;active_allocated;train.cpp:7:main;weights."
            "cpp:99:load_weights;weights.cpp:12:loader 20971520\n"
            "only_after;stream_0;seg_139637976727552;active_allocated;train.cpp:7:main;train.cpp:"
            "45:train_step 104857600\n"
            "only_after;stream_0;seg_139638245163008;active_allocated;train.cpp:7:main;train.cpp:"
            "45:train_step 31457280\n"
            "only_after;stream_0;seg_139638513598464;active_allocated;train.cpp:7:main;weights.cpp:"
            "99:load_weights;weights.cpp:12:loader 20971520\n"
            "only_after;stream_0;seg_139638782033920;active_allocated;train.cpp:7:main;train.cpp:"
            "45:train_step;data.cpp:3:augment 16777216\n");
}

// The current form as Python's pickle loads it: every segment, block and frame, and the
// allocations in device_traces by their time.
TEST(TorchSnapshotCommand, TheCurrentFormGpumemWritesLoadsInPythonWithEveryByteOfTheLevel) {
  const std::string folder = temporary_folder();
  const std::string out = folder + "/viz.pickle";
  const CommandResult written = gpumem(
      {"attribution", std::string(GPUMEM_TEST_DOCS) + "/snap.json", "--torch-snapshot", out});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const CommandResult summary = helper({"summary", out});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_EQ(
      summary.out,
      "dict: device_traces, segments\n"
      "device_traces: [[('segment_alloc', '0x7f0000000000', 62914560, 1000000), ('alloc', "
      "'0x7f0000000000', 62914560, 1000000), ('segment_alloc', '0x7f0010000000', 52428800, "
      "1000000), ('alloc', '0x7f0010000000', 52428800, 1000000), ('segment_alloc', "
      "'0x7f0020000000', 41943040, 1000000), ('alloc', '0x7f0020000000', 41943040, 1000000), "
      "('segment_alloc', '0x7f0030000000', 20971520, 1000000), ('alloc', '0x7f0030000000', "
      "20971520, 1000000), ('segment_alloc', '0x7f0040000000', 10485760, 1000000), ('alloc', "
      "'0x7f0040000000', 10485760, 1000000)]]\n"
      "segment device 0 0x7f0000000000 62914560 stream 0 large\n"
      "  active_allocated 0x7f0000000000 62914560: train_step train.cpp:42; main train.cpp:7\n"
      "segment device 0 0x7f0010000000 52428800 stream 0 large\n"
      "  active_allocated 0x7f0010000000 52428800: load_weights weights.cpp:99; main train.cpp:7\n"
      "segment device 0 0x7f0020000000 41943040 stream 0 large\n"
      "  active_allocated 0x7f0020000000 41943040: train_step train.cpp:42; main train.cpp:7\n"
      "segment device 0 0x7f0030000000 20971520 stream 0 large\n"
      "  active_allocated 0x7f0030000000 20971520: loader weights.cpp:12; load_weights "
      "weights.cpp:99; main train.cpp:7\n"
      "segment device 0 0x7f0040000000 10485760 stream 0 large\n"
      "  active_allocated 0x7f0040000000 10485760: \n"
      "segment device 0 0x7f0040a00000 20971520 stream 0 large\n"
      "  active_allocated 0x7f0040a00000 20971520: <gpumem: held without a block> :0\n");
  // And gpumem reads its own snapshot back: the level the same, every byte now a block.
  const CommandResult back = gpumem({"attribution", out, "--wide"});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out,
            "peak of scope torch snapshot on GPU 0, at 0 ms\n"
            "level 200.0 MiB: 200.0 MiB in 6 live blocks from 5 stacks, 0 B held without a block\n"
            "\n"
            "    BYTES  SHARE  BLOCKS  ALLOCATED BY                    CALLED FROM\n"
            "100.0 MiB  50.0%       2  train_step (train.cpp:42)       main\n"
            " 50.0 MiB  25.0%       1  load_weights (weights.cpp:99)   main\n"
            " 20.0 MiB  10.0%       1  loader (weights.cpp:12)         load_weights ← main\n"
            " 20.0 MiB  10.0%       1  <gpumem: held without a block>\n"
            " 10.0 MiB   5.0%       1  (no stack captured)\n");
}

}  // namespace
}  // namespace gpumem::testing
