#include "attribution/document_fields.hpp"

namespace gpumem::detail::attribution::fields {
namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

}  // namespace

std::string one_of(const Object& object, const char* name,
                   std::initializer_list<const char*> allowed) {
  return object.one_of(name, allowed);
}

Device read_device(const Object& object) {
  return {static_cast<int>(*object.optional_integer("ordinal", 0, kMaxInt, true)),
          object.optional_text("uuid").value_or(""), object.optional_text("name").value_or(""),
          object.optional_bytes("total_bytes").value_or(0)};
}

Frame read_frame(const Object& object) {
  Frame frame;
  frame.function = object.optional_text("function");
  frame.file = object.optional_text("file");
  frame.line = object.optional_integer("line", 0, kMaxInt);
  frame.module = object.optional_text("module");
  frame.address = object.optional_text("address");
  frame.language = one_of(object, "language", {"native", "python"});
  return frame;
}

namespace {

[[noreturn]] void not_a_frame(const std::string& where, std::size_t depth, const std::string& frame,
                              std::optional<std::size_t> frames) {
  throw BadField(where + "[" + std::to_string(depth) + "]: " + frame +
                 " is not an index into frames" +
                 (frames ? " (" + std::to_string(*frames) + " frames)" : std::string()));
}

}  // namespace

std::vector<std::size_t> read_stack(const Json& value, const std::string& where,
                                    std::optional<std::size_t> frames) {
  if (!value.is_array()) throw BadField(where + ": expected a list of frame indices");
  std::vector<std::size_t> stack;
  stack.reserve(value.size());
  for (std::size_t depth = 0; depth < value.size(); ++depth) {
    const Json& frame = value[depth];
    if (!frame.is_number_unsigned() || (frames && frame.get<std::uint64_t>() >= *frames))
      not_a_frame(where, depth, shown(frame), frames);
    stack.push_back(frame.get<std::size_t>());
  }
  return stack;
}

void check_indices(const Document& document, bool frames, bool stacks) {
  if (frames) {
    for (std::size_t at = 0; at < document.stacks.size(); ++at) {
      const std::vector<std::size_t>& stack = document.stacks[at];
      for (std::size_t depth = 0; depth < stack.size(); ++depth) {
        if (stack[depth] >= document.frames.size())
          not_a_frame("stacks[" + std::to_string(at) + "]", depth, std::to_string(stack[depth]),
                      document.frames.size());
      }
    }
  }
  if (!stacks) return;
  const std::size_t count = document.stacks.size();
  auto check = [&](const std::optional<std::size_t>& stack, const std::string& where) {
    if (stack && *stack >= count)
      throw BadField(where + "stack: " + std::to_string(*stack) + " is out of range (" +
                     std::to_string(count) + " stacks)");
  };
  for (std::size_t at = 0; at < document.snapshots.size(); ++at) {
    const Snapshot& snapshot = document.snapshots[at];
    const std::string where = "snapshots[" + std::to_string(at) + "].";
    for (std::size_t block = 0; block < snapshot.blocks.size(); ++block)
      check(snapshot.blocks[block].stack, where + "blocks[" + std::to_string(block) + "].");
    if (snapshot.failure) check(snapshot.failure->stack, where + "failure.");
  }
}

Block read_block(const Object& object, std::size_t stacks) {
  Block block;
  block.address = object.text("address");
  block.bytes = object.bytes("bytes");
  block.kind = one_of(object, "kind", {"device", "vmm", "pool", "managed", "graph"});
  block.age_s = object.seconds("age_s");
  block.stack = object.index("stack", stacks, "stacks");
  block.pid = object.optional_integer("pid", 0, kMaxInt);
  return block;
}

Snapshot read_snapshot(const Object& object, std::size_t stacks, std::vector<std::string>& warnings,
                       std::vector<Block>* streamed) {
  Snapshot snapshot;
  snapshot.what = one_of(object, "what", {"peak", "oom"});
  snapshot.scope = object.optional_text("scope");
  snapshot.pid = object.optional_integer("pid", 0, kMaxInt);
  snapshot.device = static_cast<int>(*object.optional_integer("device", 0, kMaxInt, true));
  snapshot.time_s = object.seconds("time_s");
  snapshot.monotonic_ns =
      object.optional_integer("monotonic_ns", std::numeric_limits<std::int64_t>::min(),
                              std::numeric_limits<std::int64_t>::max());
  snapshot.level_bytes = object.bytes("level_bytes");
  snapshot.live_bytes = object.bytes("live_bytes");
  snapshot.context_bytes = object.optional_bytes("context_bytes");
  snapshot.attributed = object.optional_flag("attributed");
  const Json& blocks = object.list("blocks");
  if (streamed != nullptr) {
    snapshot.blocks = std::move(*streamed);
  } else {
    snapshot.blocks.reserve(blocks.size());
    for (std::size_t at = 0; at < blocks.size(); ++at)
      snapshot.blocks.push_back(
          read_block(Object(blocks[at], object.item("blocks", at) + "."), stacks));
  }
  std::int64_t sum = 0;
  for (const Block& block : snapshot.blocks) {
    if (__builtin_add_overflow(sum, block.bytes, &sum))
      object.fail("blocks", "the blocks' bytes add up to more than any size");
  }
  if (sum != snapshot.live_bytes)
    object.fail("live_bytes", std::to_string(snapshot.live_bytes) +
                                  " is not the sum of blocks[].bytes (" + std::to_string(sum) +
                                  ")");
  // The fields' own values (bytes): the file says what they are.
  if (snapshot.level_bytes < snapshot.live_bytes)
    warnings.push_back(object.where() + "level_bytes: " + std::to_string(snapshot.level_bytes) +
                       " is below the " + std::to_string(snapshot.live_bytes) +
                       " bytes its blocks hold; the blocks are shown in full");
  else if (snapshot.context_bytes &&
           snapshot.level_bytes - snapshot.live_bytes < *snapshot.context_bytes)
    warnings.push_back(object.where() + "level_bytes: " + std::to_string(snapshot.level_bytes) +
                       " is below its blocks' " + std::to_string(snapshot.live_bytes) +
                       " bytes and its " + std::to_string(*snapshot.context_bytes) +
                       " bytes of context");
  if (const Json* failure = object.find("failure"); failure != nullptr && !failure->is_null()) {
    const Object entry(*failure, object.where() + "failure.");
    snapshot.failure = Failure{entry.bytes("bytes"),
                               one_of(entry, "kind", {"device", "vmm", "pool", "managed", "graph"}),
                               entry.index("stack", stacks, "stacks"),
                               entry.text("error"),
                               entry.bytes("free_bytes"),
                               entry.bytes("total_bytes")};
  }
  const Json& others = object.list("other_processes", false);
  for (std::size_t at = 0; at < others.size(); ++at) {
    const Object entry(others[at], object.item("other_processes", at) + ".");
    snapshot.other_processes.push_back(
        {*entry.optional_integer("pid", 0, kMaxInt, true), entry.optional_text("name").value_or(""),
         entry.optional_bytes("used_bytes"), entry.optional_flag("in_run"),
         entry.optional_integer("rank", 0, kMaxInt)});
  }
  snapshot.other_processes_age_s = object.optional_seconds("other_processes_age_s");
  return snapshot;
}

Step read_step(const Json& pair, const std::string& where, const std::vector<Step>& before) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() ||
      !pair[1].is_number_integer() || pair[1].get<std::int64_t>() < 0 ||
      (pair[1].is_number_unsigned() &&
       pair[1].get<std::uint64_t>() >
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
    throw BadField(where + ": expected [time_s, bytes], found " + shown(pair));
  const double time = pair[0].get<double>();
  if (!before.empty() && time < before.back().first)
    throw BadField(where + ": time " + shown(pair[0]) + " is before the step ahead of it");
  return {time, pair[1].get<std::int64_t>()};
}

Timeline read_series(const Object& object, std::vector<Step>* streamed) {
  Timeline series;
  series.device = static_cast<int>(*object.optional_integer("device", 0, kMaxInt, true));
  const Json& steps = object.list("steps");
  if (streamed != nullptr) {
    series.steps = std::move(*streamed);
  } else {
    for (std::size_t step = 0; step < steps.size(); ++step)
      series.steps.push_back(read_step(steps[step], object.item("steps", step), series.steps));
  }
  return series;
}

void finish_document(const Json& json, const Streamed& streamed, Document& document) {
  const Object root(json, "");
  document.command = root.optional_text("command").value_or("");
  document.host = root.optional_text("host").value_or("");
  const Json& devices = root.list("devices");
  for (std::size_t at = 0; at < devices.size(); ++at)
    document.devices.push_back(read_device(Object(devices[at], root.item("devices", at) + ".")));
  const Json& frames = root.list("frames");
  if (!streamed.frames) {
    document.frames.reserve(frames.size());
    for (std::size_t at = 0; at < frames.size(); ++at)
      document.frames.push_back(read_frame(Object(frames[at], root.item("frames", at) + ".")));
  }
  const Json& stacks = root.list("stacks");
  if (!streamed.stacks) {
    document.stacks.reserve(stacks.size());
    for (std::size_t at = 0; at < stacks.size(); ++at)
      document.stacks.push_back(
          read_stack(stacks[at], root.item("stacks", at), document.frames.size()));
  }
  const Json& snapshots = root.list("snapshots");
  if (!streamed.snapshots) {
    for (std::size_t at = 0; at < snapshots.size(); ++at)
      document.snapshots.push_back(
          read_snapshot(Object(snapshots[at], root.item("snapshots", at) + "."),
                        document.stacks.size(), document.warnings, nullptr));
  }
  const Json& timeline = root.list("timeline", false);
  if (!streamed.timeline) {
    for (std::size_t at = 0; at < timeline.size(); ++at)
      document.timeline.push_back(
          read_series(Object(timeline[at], root.item("timeline", at) + "."), nullptr));
  }
}

}  // namespace gpumem::detail::attribution::fields
