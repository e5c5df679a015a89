// `gpumem run --attribute` on Python programs that never import gpumem (the real python3): the
// allocating thread's own Python frames, read with the GIL released around the call (ctypes; a C
// extension as PyTorch's bindings are), per thread, none on a thread without a Python state;
// every view names the same frame, and `gpumem diff` matches the stacks across moved lines.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command_runner.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"
#include "support/sim_gpu.hpp"

namespace gpumem::testing {
namespace {

namespace model = gpumem::detail::attribution;

// The program, with `padding` blank lines before its functions (a later edit that moved them).
std::string program(int padding) {
  return R"(import ctypes, os, sys, threading
sys.path.insert(0, os.environ["GIL_EXTENSION_DIR"])
import gil_release_ext
cuda = ctypes.CDLL(os.environ["GPUMEM_CUDA_LIBRARY"])
MiB = 1 << 20
def check(status):
    if status != 0:
        raise SystemExit(f"CUDA error {status}")
check(cuda.cuInit(0))
device = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(device), 0))
context = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
check(cuda.cuCtxSetCurrent(context))
kept = []
)" + std::string(static_cast<std::size_t>(padding), '\n') +
         R"(def load_weights():
    weights = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(weights), ctypes.c_size_t(768 * MiB)))  # LOAD
    kept.append(weights)

def activations():
    check(gil_release_ext.allocate_released(256 * MiB))  # ACTIVATIONS

def prefetch():
    check(cuda.cuCtxSetCurrent(context))
    buffer = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(buffer), ctypes.c_size_t(128 * MiB)))  # PREFETCH
    kept.append(buffer)

def workspace():
    check(gil_release_ext.allocate_on_native_thread(64 * MiB))

load_weights()
activations()
thread = threading.Thread(target=prefetch)
thread.start()
thread.join()
workspace()
)";
}

// The line of `marker` in `text`, 1-based.
std::int64_t line_of(const std::string& text, const std::string& marker) {
  const std::size_t at = text.find(marker);
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
}

struct PythonRun {
  std::string folder;
  std::string source;
  CommandResult result;
  std::optional<model::Document> document;
};

PythonRun run_program(const std::string& folder, int padding, const std::string& name = "a.json") {
  PythonRun run;
  run.folder = folder;
  run.source = program(padding);
  std::ofstream(folder + "/train.py") << run.source;
  ::setenv("GIL_EXTENSION_DIR", GPUMEM_GIL_EXTENSION_DIR, 1);
  ::setenv("COLUMNS", "80", 1);  // the summary's tables, fitted to 80 columns
  run.result = run_command({gpumem_binary(), "run", "--attribute", folder + "/" + name, "--",
                            GPUMEM_PYTHON, folder + "/train.py"});
  std::string error;
  run.document = model::read_document(folder + "/" + name, &error);
  return run;
}

// The allocating frame (the library's policy) of the stack holding exactly `bytes` at the peak.
const model::Frame* allocated(const model::Document& document, std::int64_t bytes,
                              const std::vector<std::size_t>** stack_out = nullptr) {
  for (const model::Snapshot& snapshot : document.snapshots) {
    if (snapshot.what != "peak") continue;
    for (const model::Block& block : snapshot.blocks) {
      if (block.bytes != bytes || !block.stack) continue;
      const auto& stack = document.stacks[*block.stack];
      if (stack_out != nullptr) *stack_out = &stack;
      const auto position = model::allocating_position(document, stack);
      return position ? &document.frames[stack[*position]] : nullptr;
    }
  }
  return nullptr;
}

std::string label(const model::Frame* frame) {
  return frame == nullptr ? "(none)" : model::short_frame_label(*frame, "…");
}

class RunPython : public ::testing::Test {
 protected:
  SimGpu gpu_;
};

TEST_F(RunPython, EachAllocationIsNamedByItsOwnThreadsPythonFrameWithTheGilReleased) {
  const PythonRun run = run_program(temporary_folder(), 0);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_TRUE(run.document) << run.result.err;
  const model::Document& document = *run.document;
  // ctypes releases the GIL around the call: the thread's frame, its file and the call's line.
  EXPECT_EQ(label(allocated(document, 768 * MiB)),
            "load_weights (train.py:" + std::to_string(line_of(run.source, "# LOAD")) + ")");
  const model::Frame* weights = allocated(document, 768 * MiB);
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->language, "python");
  EXPECT_EQ(weights->file, run.folder + "/train.py");
  // A C extension that releases the GIL around the driver's call, as PyTorch's bindings do.
  EXPECT_EQ(label(allocated(document, 256 * MiB)),
            "activations (train.py:" + std::to_string(line_of(run.source, "# ACTIVATIONS")) + ")");
  // Another Python thread: its own frames, not the main thread's.
  const std::vector<std::size_t>* prefetch_stack = nullptr;
  EXPECT_EQ(label(allocated(document, 128 * MiB, &prefetch_stack)),
            "prefetch (train.py:" + std::to_string(line_of(run.source, "# PREFETCH")) + ")");
  ASSERT_NE(prefetch_stack, nullptr);
  for (const std::size_t frame : *prefetch_stack)
    EXPECT_NE(document.frames[frame].function, "load_weights");
  // A native thread with no Python state: no Python frame, its own native function.
  const std::vector<std::size_t>* native_stack = nullptr;
  EXPECT_TRUE(label(allocated(document, 64 * MiB, &native_stack))
                  .starts_with("native_worker (gil_release_ext.c:"))
      << label(allocated(document, 64 * MiB));
  ASSERT_NE(native_stack, nullptr);
  for (const std::size_t frame : *native_stack)
    EXPECT_EQ(document.frames[frame].language, "native")
        << model::frame_label(document.frames[frame]);
}

TEST_F(RunPython, EveryViewNamesTheAllocatingPythonFrame) {
  const PythonRun run = run_program(temporary_folder(), 0);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string load =
      "load_weights (train.py:" + std::to_string(line_of(run.source, "# LOAD")) + ")";
  // The run's own summary, fitted to 80 columns, keeps the column.
  EXPECT_NE(run.result.err.find(load), std::string::npos) << run.result.err;
  const std::string a = run.folder + "/a.json";
  const CommandResult table = run_command(
      {gpumem_binary(), "attribution", a, "--width", "80", "--svg", run.folder + "/i.svg", "--html",
       run.folder + "/r.html", "--pprof", run.folder + "/p.pb.gz"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("768.0 MiB"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(load), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("ffi"), std::string::npos) << table.out;
  // The icicle's boxes end at the allocating frame: no interpreter or ctypes frames drawn.
  const std::string svg = read_file(run.folder + "/i.svg");
  EXPECT_NE(svg.find("load_weights"), std::string::npos);
  EXPECT_EQ(svg.find("_PyEval_EvalFrameDefault"), std::string::npos);
  EXPECT_EQ(svg.find("ffi_call"), std::string::npos);
  // pprof's samples start at the allocating frame: the interpreter's and ctypes' frames are not
  // among its locations (nor their names in its string table).
  const CommandResult profile = run_command({"gzip", "-dc", run.folder + "/p.pb.gz"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_NE(profile.out.find("load_weights"), std::string::npos);
  EXPECT_EQ(profile.out.find("_PyEval_EvalFrameDefault"), std::string::npos);
  EXPECT_EQ(profile.out.find("libffi"), std::string::npos);
  // The HTML report carries the library's decision, not a frame of its own choosing.
  const std::string html = read_file(run.folder + "/r.html");
  EXPECT_NE(html.find("\"labels\":[\""), std::string::npos);
  EXPECT_NE(html.find("\"" + load + "\""), std::string::npos);
}

TEST_F(RunPython, DiffMatchesThePythonStacksAcrossLinesThatMoved) {
  const std::string folder = temporary_folder();
  const PythonRun first = run_program(folder, 0, "before.json");
  const PythonRun second = run_program(folder, 3, "after.json");
  ASSERT_EQ(first.result.exit_code, 0) << first.result.err;
  ASSERT_EQ(second.result.exit_code, 0) << second.result.err;
  const CommandResult diff = run_command(
      {gpumem_binary(), "diff", folder + "/before.json", folder + "/after.json", "--json", "-"});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  const nlohmann::json json = nlohmann::json::parse(diff.out);
  ASSERT_EQ(json["stacks"].size(), 4u) << json["stacks"].dump(2);
  const std::string moved = "load_weights (" + folder +
                            "/train.py:" + std::to_string(line_of(second.source, "# LOAD")) + ")";
  bool found = false;
  for (const auto& stack : json["stacks"]) {
    EXPECT_EQ(stack["change"], "unchanged") << stack.dump(2);
    if (stack["allocated_by"] == moved) {
      found = true;
      EXPECT_EQ(stack["before_bytes"], 768 * MiB);
      EXPECT_EQ(stack["after_bytes"], 768 * MiB);
    }
  }
  EXPECT_TRUE(found) << json["stacks"].dump(2);
}

}  // namespace
}  // namespace gpumem::testing
