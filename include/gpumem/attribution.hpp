// Attribution: which code held the memory at a peak, or when an allocation ran out of memory.
//
// In attribution mode the exact source keeps, for every live block, its size, kind, time and
// allocating call stack, and each attributing counter keeps the set of blocks live at its peak.
// A snapshot lists those blocks with their stacks symbolized; to_json() writes the
// gpumem.attribution/1 document (docs/attribution.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The public API: exported from libgpumem.so (everything else in it is hidden).
#pragma GCC visibility push(default)

namespace gpumem {

// Whether a counter records what was live at its peak. Off by default; GPUMEM_ATTRIBUTE=1 in the
// environment turns it on for every exact counter of the process.
enum class Attribution : std::uint8_t { off, on };

enum class BlockKind : std::uint8_t {
  device,   // cuMemAlloc*, cudaMalloc*
  vmm,      // cuMemCreate
  pool,     // a stream-ordered pool's reservation
  managed,  // cuMemAllocManaged
  graph,    // graph memory
};
std::string_view to_string(BlockKind kind) noexcept;

struct StackFrame {
  std::optional<std::string> function;  // demangled; nullopt when it could not be symbolized
  std::optional<std::string> file;      // nullopt without debug information
  std::optional<int> line;
  std::optional<std::string> module;     // the shared object or executable (native frames)
  std::optional<std::uint64_t> address;  // the return address (native frames)
  bool python = false;                   // a frame of the Python frame provider
  friend bool operator==(const StackFrame&, const StackFrame&) = default;
};

struct LiveBlock {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  BlockKind kind = BlockKind::device;
  double age_s = 0;                  // how long it had been live at the snapshot's moment
  std::optional<std::size_t> stack;  // index into AttributionSnapshot::stacks
  int pid = 0;
};

struct AllocationFailure {
  std::uint64_t bytes = 0;
  BlockKind kind = BlockKind::device;
  std::optional<std::size_t> stack;
  std::string error;  // "CUDA_ERROR_OUT_OF_MEMORY"
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};

struct OtherProcess {
  unsigned pid = 0;
  std::string name;
  std::uint64_t used_bytes = 0;
};

// The device a snapshot is of, as the document's `devices` names it.
struct SnapshotDevice {
  int device = 0;    // CUDA ordinal
  std::string uuid;  // empty where it could not be read
  std::string name;
  std::uint64_t total_bytes = 0;
};

// One recorded moment, with the frames and stacks its blocks name.
struct AttributionSnapshot {
  std::string what;  // "peak" or "oom"
  std::optional<std::string> scope;
  int pid = 0;
  int device = 0;
  double time_s = 0;  // since the recording process started
  // The same moment on the host's monotonic clock (CLOCK_MONOTONIC, in ns): comparable between
  // the processes of one machine, so that several processes' snapshots share one timeline.
  std::int64_t monotonic_ns = 0;
  std::int64_t level_bytes = 0;
  std::int64_t live_bytes = 0;
  // Whether blocks were recorded: an out-of-memory failure outside attribution mode records the
  // request and the device's memory, and no blocks.
  bool attributed = true;
  std::vector<LiveBlock> blocks;  // largest first
  std::optional<AllocationFailure> failure;
  // For an out-of-memory snapshot: every other process NVML listed on the device, and how long
  // before the failure that list was read (0: at the failure). nullopt where NVML was not read:
  // who else held the device is then unknown, which an empty list does not say.
  std::vector<OtherProcess> other_processes;
  std::optional<double> other_processes_age_s;
  std::vector<StackFrame> frames;
  std::vector<std::vector<std::size_t>> stacks;  // indices into frames, innermost first
  SnapshotDevice device_identity;

  // The gpumem.attribution/1 document holding this snapshot.
  std::string to_json() const;
  // Bytes held per stack (index into stacks), largest first; blocks without a stack left out.
  std::vector<std::pair<std::size_t, std::uint64_t>> bytes_by_stack() const;
  // The allocating frame of `stack` (an index into stacks), as an index into frames: the
  // innermost frame that is the user's, Python frames first (docs/attribution.md, "The
  // allocating frame"; every view decides it so); nullopt for an unknown or empty stack.
  std::optional<std::size_t> allocating_frame(std::size_t stack) const;
  // The function of the allocating frame of the stack that held the most, or nullopt.
  std::optional<std::string> top_function() const;
};

// One document holding several snapshots (their frames and stacks merged).
std::string attribution_json(const std::vector<AttributionSnapshot>& snapshots);

// The last allocation of this process that failed with out-of-memory while the exact source
// was subscribed, or nullopt. Also written to $GPUMEM_OOM_REPORT, when set, as it happens.
std::optional<AttributionSnapshot> last_oom();

// Python frames for allocation stacks: the Python package registers a provider that writes the
// current frame chain, innermost first, as (function, file, line) and returns how many it wrote.
// It is called on the allocating thread in attribution mode; the strings need only live until it
// returns to its caller's caller (they are copied when a stack is new). nullptr removes it.
struct PythonFrame {
  const char* function = nullptr;
  const char* file = nullptr;
  int line = 0;
};
using PythonFrameProvider = std::size_t (*)(PythonFrame* frames, std::size_t capacity) noexcept;
void set_python_frame_provider(PythonFrameProvider provider) noexcept;

}  // namespace gpumem

#pragma GCC visibility pop
