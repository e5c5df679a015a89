#include "attribution/materialize.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "attribution/stacks.hpp"
#include "attribution/symbolize.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/attribution_frames.hpp"
#include "gpumem/internal/clock.hpp"

namespace gpumem::attribution {
namespace {

const std::int64_t g_origin_ns = support::monotonic_ns();

using FrameKey =
    std::tuple<std::optional<std::string>, std::optional<std::string>, std::optional<int>,
               std::optional<std::string>, std::optional<std::uint64_t>, bool>;

class Frames {
 public:
  explicit Frames(std::vector<StackFrame>& frames) : frames_(frames) {}
  std::size_t index(StackFrame frame) {
    FrameKey key{frame.function, frame.file, frame.line, frame.module, frame.address, frame.python};
    const auto found = index_.find(key);
    if (found != index_.end()) return found->second;
    frames_.push_back(std::move(frame));
    index_.emplace(std::move(key), frames_.size() - 1);
    return frames_.size() - 1;
  }

 private:
  std::vector<StackFrame>& frames_;
  std::map<FrameKey, std::size_t> index_;
};

StackFrame native_frame(const NativeFrame& frame) {
  StackFrame out;
  out.function = frame.function;
  out.file = frame.file;
  out.line = frame.line;
  out.module = frame.module;
  out.address = frame.address;
  return out;
}

// Innermost first: the native frames below the interpreter, then the Python frames, then the
// interpreter's native frames to main; gpumem's and CUDA's innermost frames left out.
std::vector<std::size_t> resolve(const Stack& stack, Frames& frames) {
  const std::vector<NativeFrame> native = symbolize(stack.native);
  std::size_t first = 0;
  while (first < native.size() && is_tooling_frame(native[first])) ++first;
  std::size_t interpreter = native.size();
  if (!stack.python.empty()) {
    for (std::size_t i = first; i < native.size(); ++i) {
      if (is_interpreter_frame(native[i])) {
        interpreter = i;
        break;
      }
    }
  }
  std::vector<std::size_t> indices;
  for (std::size_t i = first; i < interpreter; ++i) {
    indices.push_back(frames.index(native_frame(native[i])));
  }
  for (const InternedPythonFrame& python : stack.python) {
    StackFrame out;
    out.function = python.function;
    out.file = python.file;
    out.line = python.line;
    out.python = true;
    indices.push_back(frames.index(std::move(out)));
  }
  for (std::size_t i = interpreter; i < native.size(); ++i) {
    indices.push_back(frames.index(native_frame(native[i])));
  }
  return indices;
}

std::mutex g_oom_mutex;
std::optional<AttributionSnapshot> g_last_oom;

}  // namespace

double seconds_since_start(std::int64_t time_ns) noexcept {
  return static_cast<double>(time_ns - g_origin_ns) / 1e9;
}

AttributionSnapshot materialize(const RawMoment& moment) {
  AttributionSnapshot snapshot;
  snapshot.what = moment.what;
  snapshot.scope = moment.scope;
  snapshot.pid = static_cast<int>(::getpid());
  snapshot.device = moment.device;
  snapshot.time_s = seconds_since_start(moment.time_ns);
  snapshot.monotonic_ns = moment.time_ns;
  snapshot.level_bytes = moment.level;
  snapshot.attributed = moment.attributed;
  snapshot.other_processes = moment.other_processes;
  if (moment.other_processes_read) snapshot.other_processes_age_s = 0.0;
  snapshot.device_identity = moment.device_identity;

  Frames frames(snapshot.frames);
  std::unordered_map<std::uint32_t, std::size_t> stack_index;
  auto stack_of = [&](std::uint32_t id) -> std::optional<std::size_t> {
    if (id == 0) return std::nullopt;
    const auto found = stack_index.find(id);
    if (found != stack_index.end()) return found->second;
    snapshot.stacks.push_back(resolve(stack(id), frames));
    stack_index.emplace(id, snapshot.stacks.size() - 1);
    return snapshot.stacks.size() - 1;
  };

  std::vector<BlockTable::Entry> blocks = moment.blocks;
  std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) {
    return a.info.bytes != b.info.bytes ? a.info.bytes > b.info.bytes : a.key < b.key;
  });
  snapshot.blocks.reserve(blocks.size());
  for (const BlockTable::Entry& entry : blocks) {
    LiveBlock block;
    block.address = entry.key & ~(std::uint64_t{0xf} << 60);  // without a key's kind tag
    block.bytes = entry.info.bytes;
    block.kind = static_cast<BlockKind>(entry.info.kind);
    block.age_s = std::max(0.0, static_cast<double>(moment.time_ns - entry.info.time_ns) / 1e9);
    block.stack = stack_of(entry.info.stack);
    block.pid = snapshot.pid;
    snapshot.live_bytes += static_cast<std::int64_t>(block.bytes);
    snapshot.blocks.push_back(block);
  }
  if (moment.failure) {
    AllocationFailure failure;
    failure.bytes = moment.failure->bytes;
    failure.kind = static_cast<BlockKind>(moment.failure->kind);
    failure.stack = stack_of(moment.failure->stack);
    failure.error = moment.failure->error;
    failure.free_bytes = moment.failure->free_bytes;
    failure.total_bytes = moment.failure->total_bytes;
    snapshot.failure = failure;
  }
  return snapshot;
}

void set_last_oom(AttributionSnapshot snapshot) {
  const std::lock_guard lock(g_oom_mutex);
  g_last_oom = std::move(snapshot);
}

}  // namespace gpumem::attribution

namespace gpumem {

std::optional<AttributionSnapshot> last_oom() {
  const std::lock_guard lock(attribution::g_oom_mutex);
  return attribution::g_last_oom;
}

std::string_view to_string(BlockKind kind) noexcept {
  switch (kind) {
    case BlockKind::device:
      return "device";
    case BlockKind::vmm:
      return "vmm";
    case BlockKind::pool:
      return "pool";
    case BlockKind::managed:
      return "managed";
    case BlockKind::graph:
      return "graph";
  }
  return "device";
}

std::vector<std::pair<std::size_t, std::uint64_t>> AttributionSnapshot::bytes_by_stack() const {
  std::vector<std::uint64_t> bytes(stacks.size(), 0);
  for (const LiveBlock& block : blocks) {
    if (block.stack && *block.stack < bytes.size()) bytes[*block.stack] += block.bytes;
  }
  std::vector<std::pair<std::size_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] > 0) out.emplace_back(i, bytes[i]);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

std::optional<std::size_t> AttributionSnapshot::allocating_frame(std::size_t stack) const {
  if (stack >= stacks.size()) return std::nullopt;
  // The policy reads the document's model: this snapshot's frames as it holds them.
  detail::attribution::Document document;
  std::vector<std::size_t> indices;
  for (const std::size_t frame : stacks[stack]) {
    if (frame >= frames.size()) return std::nullopt;
    indices.push_back(document.frames.size());
    document.frames.push_back(detail::attribution::document_frame(frames[frame]));
  }
  const auto position = detail::attribution::allocating_position(document, indices);
  if (!position) return std::nullopt;
  return stacks[stack][*position];
}

std::optional<std::string> AttributionSnapshot::top_function() const {
  const auto by_stack = bytes_by_stack();
  if (by_stack.empty()) return std::nullopt;
  const std::optional<std::size_t> frame = allocating_frame(by_stack.front().first);
  if (!frame) return std::nullopt;
  return detail::attribution::frame_function(detail::attribution::document_frame(frames[*frame]));
}

}  // namespace gpumem
