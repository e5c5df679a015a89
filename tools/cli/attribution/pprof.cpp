// A snapshot in pprof's format: one location per frame, one function per function and file,
// one mapping per module; a sample per (stack, kind, pid) valued [blocks, bytes]. What the level
// holds without a block is a sample of its own, so the profile's total is the level.
#include <zlib.h>

#include <cstdlib>
#include <map>
#include <tuple>
#include <unordered_map>

#include "attribution/profile.pb.h"
#include "attribution/views.hpp"

namespace gpumem::cli::attribution {
namespace {

class Strings {
 public:
  explicit Strings(pprof::Profile& profile) : profile_(profile) { index(""); }

  std::int64_t index(const std::string& text) {
    const auto [found, added] = indices_.try_emplace(text, profile_.string_table_size());
    if (added) profile_.add_string_table(text);
    return found->second;
  }

 private:
  pprof::Profile& profile_;
  std::unordered_map<std::string, std::int64_t> indices_;
};

std::uint64_t parse_address(const std::optional<std::string>& text) {
  if (!text) return 0;
  return std::strtoull(text->c_str(), nullptr, 16);
}

std::optional<std::string> gzip(const std::string& data, std::string* error) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    if (error != nullptr) *error = "zlib could not start compressing";
    return std::nullopt;
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) {
    if (error != nullptr) *error = "zlib could not compress the profile";
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<std::string> pprof_profile(const Document& document, const Snapshot& snapshot,
                                         std::string* error) {
  pprof::Profile profile;
  Strings strings(profile);
  auto value_type = [&](pprof::ValueType* type, const char* name, const char* unit) {
    type->set_type(strings.index(name));
    type->set_unit(strings.index(unit));
  };
  value_type(profile.add_sample_type(), "inuse_objects", "count");
  value_type(profile.add_sample_type(), "inuse_space", "bytes");
  value_type(profile.mutable_period_type(), "space", "bytes");
  profile.set_period(1);
  profile.set_default_sample_type(strings.index("inuse_space"));
  profile.add_comment(strings.index("gpumem attribution: " + describe(document, snapshot)));
  if (!document.command.empty()) profile.add_comment(strings.index("command: " + document.command));

  std::map<std::string, std::uint64_t> mappings;
  std::map<std::pair<std::string, std::string>, std::uint64_t> functions;
  auto function_id = [&](const std::string& name, const std::string& file) {
    const auto [found, added] = functions.try_emplace({name, file}, functions.size() + 1);
    if (added) {
      pprof::Function* function = profile.add_function();
      function->set_id(found->second);
      function->set_name(strings.index(name));
      function->set_system_name(strings.index(name));
      function->set_filename(strings.index(file));
    }
    return found->second;
  };
  // Locations: frame i is id i + 1, made when a sample first needs it; the special ones after.
  std::vector<bool> located(document.frames.size(), false);
  auto location_of_frame = [&](std::size_t index) -> std::uint64_t {
    const std::uint64_t id = index + 1;
    if (located[index]) return id;
    located[index] = true;
    const Frame& frame = document.frames[index];
    pprof::Location* location = profile.add_location();
    location->set_id(id);
    location->set_address(parse_address(frame.address));
    if (frame.module) {
      const auto [found, added] = mappings.try_emplace(*frame.module, mappings.size() + 1);
      if (added) {
        pprof::Mapping* mapping = profile.add_mapping();
        mapping->set_id(found->second);
        mapping->set_filename(strings.index(*frame.module));
        mapping->set_has_functions(true);
        mapping->set_has_filenames(true);
        mapping->set_has_line_numbers(true);
      }
      location->set_mapping_id(found->second);
    }
    pprof::Line* line = location->add_line();
    line->set_function_id(function_id(frame.function ? *frame.function : frame_label(frame),
                                      frame.file.value_or("")));
    line->set_line(frame.line.value_or(0));
    return id;
  };
  std::map<std::string, std::uint64_t> special;
  auto special_location = [&](const std::string& name) {
    const auto [found, added] =
        special.try_emplace(name, document.frames.size() + special.size() + 1);
    if (added) {
      pprof::Location* location = profile.add_location();
      location->set_id(found->second);
      location->add_line()->set_function_id(function_id(name, ""));
    }
    return found->second;
  };

  struct Totals {
    std::int64_t blocks = 0;
    std::int64_t bytes = 0;
  };
  // By stack (the blocks without one last), kind and pid.
  std::map<std::tuple<std::size_t, std::string, std::int64_t>, Totals> samples;
  constexpr std::size_t kNoStack = static_cast<std::size_t>(-1);
  for (const Block& block : snapshot.blocks) {
    Totals& totals = samples[{block.stack.value_or(kNoStack), block.kind, block.pid.value_or(-1)}];
    ++totals.blocks;
    totals.bytes += block.bytes;
  }
  const std::int64_t kind_key = strings.index("kind"), pid_key = strings.index("pid");
  for (const auto& [key, totals] : samples) {
    const auto& [stack, kind, pid] = key;
    pprof::Sample* sample = profile.add_sample();
    if (stack == kNoStack) {
      sample->add_location_id(special_location("(no stack captured)"));
    } else if (document.stacks[stack].empty()) {
      sample->add_location_id(special_location("(an empty stack)"));
    } else {
      for (std::size_t frame : shown_stack(document, document.stacks[stack]))
        sample->add_location_id(location_of_frame(frame));
    }
    sample->add_value(totals.blocks);
    sample->add_value(totals.bytes);
    pprof::Label* label = sample->add_label();
    label->set_key(kind_key);
    label->set_str(strings.index(kind));
    if (pid >= 0) {
      label = sample->add_label();
      label->set_key(pid_key);
      label->set_num(pid);
    }
  }
  if (snapshot.context_bytes.value_or(0) > 0) {
    pprof::Sample* sample = profile.add_sample();
    sample->add_location_id(special_location("(context and modules)"));
    sample->add_value(0);
    sample->add_value(*snapshot.context_bytes);
  }
  if (snapshot.held_without_block() > 0) {
    pprof::Sample* sample = profile.add_sample();
    sample->add_location_id(special_location("(held without a block)"));
    sample->add_value(0);
    sample->add_value(snapshot.held_without_block());
  }
  std::string bytes;
  if (!profile.SerializeToString(&bytes)) {
    if (error != nullptr) *error = "the profile could not be serialized";
    return std::nullopt;
  }
  return gzip(bytes, error);
}

}  // namespace gpumem::cli::attribution
