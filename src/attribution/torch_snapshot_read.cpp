// A PyTorch memory snapshot (torch/cuda/memory.py `_snapshot`'s documented schema, as
// torch/csrc/cuda/memory_snapshot.cpp writes it) read into the attribution model.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "attribution/pickle.hpp"
#include "gpumem/internal/torch_snapshot.hpp"

namespace gpumem::detail::attribution {
namespace {

using pickle::Kind;
using pickle::Pickle;
using pickle::Value;

constexpr std::int64_t kMaxFile = 2ll << 30;

std::string hex(std::int64_t value) {
  std::ostringstream text;
  text << "0x" << std::hex << static_cast<std::uint64_t>(value);
  return text.str();
}

// A frame's file tells its language: Python's are .py files or "<…>" (<stdin>, <frozen runpy>).
bool python_file(const std::string& file) {
  return file.ends_with(".py") || (!file.empty() && file.front() == '<');
}

class Converter {
 public:
  Converter(const Pickle& pickle, std::uint64_t budget)
      : pickle_(pickle),
        budget_(budget),
        seen_(pickle.items.size(), false),
        frame_of_dict_(pickle.items.size(), kUnseen),
        stack_of_list_(pickle.items.size(), kUnseen) {}

  std::optional<Document> run(std::string* why) {
    const Value& root = pickle_.root;
    const Value* segments = nullptr;
    if (root.kind == Kind::list) {
      segments = &root;
    } else if (root.kind == Kind::dict) {
      segments = pickle_.find(root, "segments");
      if (segments == nullptr || segments->kind != Kind::list)
        return fail(why, "a dict without a list of \"segments\": not a PyTorch memory snapshot");
    } else {
      return fail(why,
                  "neither a dict with \"segments\" nor a list of segments: not a PyTorch "
                  "memory snapshot");
    }
    const auto& list = pickle_.children(*segments);
    for (std::size_t at = 0; at < list.size(); ++at) {
      if (!segment(list[at], "segments[" + std::to_string(at) + "]")) return fail(why, why_);
    }
    for (auto& [ordinal, snapshot] : per_device_) {
      document_.devices.push_back({ordinal, "", "", 0});
      document_.snapshots.push_back(std::move(snapshot));
    }
    return std::move(document_);
  }

 private:
  const Pickle& pickle_;
  std::uint64_t budget_;
  std::string why_;
  Document document_;
  std::map<int, Snapshot> per_device_;
  std::unordered_map<std::string, std::size_t> frame_index_, stack_index_;
  // A frame dict or frames list shared by reference (PyTorch symbolizes each frame once, and its
  // pickler memoizes what is shared) is converted once: by container, its frame or stack.
  static constexpr std::size_t kUnseen = ~std::size_t{0}, kNoStack = kUnseen - 1;
  // Each segment and block is its own dict in PyTorch's snapshots: one listed twice (a shared
  // reference) is refused, so that references cannot multiply the blocks read.
  std::vector<bool> seen_;
  std::vector<std::size_t> frame_of_dict_, stack_of_list_;

  std::optional<Document> fail(std::string* why, const std::string& text) {
    *why = text;
    return std::nullopt;
  }
  bool bad(const std::string& where, const std::string& what) {
    why_ = where + ": " + what;
    return false;
  }
  // Each element walked counts against the budget: shared references cannot multiply the work.
  bool spend(std::size_t count) {
    if (count > budget_)
      return bad("snapshot",
                 "expands beyond its budget of values (shared "
                 "references repeated)");
    budget_ -= count;
    return true;
  }
  bool integer(const Value& dict, const char* key, const std::string& where, std::int64_t* out,
               bool required = true) {
    const Value* value = pickle_.find(dict, key);
    if (value == nullptr) return !required || bad(where, std::string("no \"") + key + "\"");
    if (value->kind != Kind::integer && value->kind != Kind::boolean)
      return bad(where + "." + key, "not an integer");
    *out = value->integer;
    return true;
  }
  bool size(const Value& dict, const char* key, const std::string& where, std::int64_t* out) {
    if (!integer(dict, key, where, out)) return false;
    return *out >= 0 || bad(where + "." + key, "negative");
  }
  const std::vector<Value>* list(const Value& dict, const char* key, const std::string& where) {
    const Value* value = pickle_.find(dict, key);
    if (value == nullptr || value->kind == Kind::none) return nullptr;
    if (value->kind != Kind::list && value->kind != Kind::tuple) {
      bad(where + "." + key, "not a list");
      return nullptr;
    }
    return &pickle_.children(*value);
  }
  std::string text(const Value& dict, const char* key) {
    const Value* value = pickle_.find(dict, key);
    if (value == nullptr || (value->kind != Kind::text && value->kind != Kind::bytes)) return "";
    return pickle_.text(*value);
  }

  // `frames[at]`, named `list_where[at]` in an error.
  bool frame(const Value& entry, const std::string& list_where, std::size_t at,
             std::size_t* index) {
    if (entry.kind == Kind::dict && frame_of_dict_[entry.ref] != kUnseen) {
      *index = frame_of_dict_[entry.ref];
      return true;
    }
    const std::string where = list_where + "[" + std::to_string(at) + "]";
    if (entry.kind != Kind::dict) return bad(where, "not a dict");
    const std::string name = text(entry, "name"), file = text(entry, "filename");
    std::int64_t line = 0;
    if (!integer(entry, "line", where, &line, false)) return false;
    std::string key = name;
    key += '\0';
    key += file;
    key += '\0';
    key += std::to_string(line);
    const auto [it, added] = frame_index_.try_emplace(std::move(key), document_.frames.size());
    if (added) {
      Frame model;
      if (!name.empty() && name != "??") model.function = name;
      if (!file.empty() && file != "??") model.file = file;
      if (line > 0) model.line = line;
      model.language = python_file(file) ? "python" : "native";
      document_.frames.push_back(std::move(model));
    }
    *index = frame_of_dict_[entry.ref] = it->second;
    return true;
  }

  // The stack of a block's frames (innermost first), or nullopt when it has none.
  bool stack(const std::vector<Value>& frames, const std::string& where,
             std::optional<std::size_t>* out) {
    if (frames.empty()) return true;
    if (!spend(frames.size())) return false;
    std::vector<std::size_t> indices(frames.size());
    for (std::size_t at = 0; at < frames.size(); ++at)
      if (!frame(frames[at], where, at, &indices[at])) return false;
    std::string key(reinterpret_cast<const char*>(indices.data()),
                    indices.size() * sizeof(std::size_t));
    const auto [it, added] = stack_index_.try_emplace(std::move(key), document_.stacks.size());
    if (added) document_.stacks.push_back(std::move(indices));
    *out = it->second;
    return true;
  }

  bool first_time(const Value& entry, const std::string& where) {
    if (seen_[entry.ref]) return bad(where, "listed twice (a shared reference)");
    seen_[entry.ref] = true;
    return true;
  }

  bool segment(const Value& entry, const std::string& where) {
    if (entry.kind != Kind::dict) return bad(where, "not a dict");
    if (!first_time(entry, where)) return false;
    std::int64_t device = 0, address = 0, total = 0;
    if (!integer(entry, "device", where, &device, false) ||
        !integer(entry, "address", where, &address) || !size(entry, "total_size", where, &total))
      return false;
    if (device < 0 || device > 1 << 16) return bad(where + ".device", "out of range");
    const std::vector<Value>* blocks = list(entry, "blocks", where);
    if (blocks == nullptr) return why_.empty() ? bad(where, "no \"blocks\"") : false;
    if (!spend(blocks->size() + 1)) return false;
    Snapshot& snapshot = per_device_[static_cast<int>(device)];
    if (snapshot.what.empty()) {
      snapshot.what = "peak";
      snapshot.scope = "torch snapshot";
      snapshot.device = static_cast<int>(device);
    }
    snapshot.level_bytes += total;
    std::int64_t offset = address;  // blocks follow each other from the segment's address
    for (std::size_t at = 0; at < blocks->size(); ++at) {
      const std::string block_where = where + ".blocks[" + std::to_string(at) + "]";
      const Value& block = (*blocks)[at];
      if (block.kind != Kind::dict) return bad(block_where, "not a dict");
      if (!first_time(block, block_where)) return false;
      std::int64_t bytes = 0, start = offset;
      if (!size(block, "size", block_where, &bytes) ||
          !integer(block, "address", block_where, &start, false))
        return false;
      offset = start + bytes;
      if (text(block, "state") != "active_allocated") continue;
      Block live;
      live.address = hex(start);
      live.bytes = bytes;
      live.kind = "device";
      // The frames: the current form's own; the older form's in the block's last `history`
      // entry (its latest allocation).
      const std::vector<Value>* frames = list(block, "frames", block_where);
      if (frames == nullptr && !why_.empty()) return false;
      if (frames == nullptr) {
        const std::vector<Value>* history = list(block, "history", block_where);
        if (history == nullptr && !why_.empty()) return false;
        if (history != nullptr && !history->empty()) {
          frames = list(history->back(), "frames", block_where + ".history");
          if (frames == nullptr && !why_.empty()) return false;
        }
      }
      if (frames != nullptr) {
        std::size_t& known =
            stack_of_list_[static_cast<std::size_t>(frames - pickle_.items.data())];
        if (known == kUnseen) {
          if (!stack(*frames, block_where + ".frames", &live.stack)) return false;
          known = live.stack.value_or(kNoStack);
        }
        if (known != kNoStack) live.stack = known;
      }
      snapshot.live_bytes += bytes;
      snapshot.blocks.push_back(std::move(live));
    }
    return true;
  }
};

}  // namespace

SourceFormat source_format(std::string_view head) {
  return !head.empty() && static_cast<unsigned char>(head.front()) == 0x80
             ? SourceFormat::torch_pickle
             : SourceFormat::gpumem_json;
}

namespace {

std::optional<Document> convert(const std::optional<Pickle>& pickle, std::size_t file_bytes,
                                std::string why, const std::string& path, std::string* error) {
  std::optional<Document> document;
  // What the conversion may walk: a few times the file's bytes (each element a file holds takes
  // two bytes at least, a shared one too), so that references repeated cannot multiply it.
  if (pickle) document = Converter(*pickle, 4096 + 4 * std::uint64_t{file_bytes}).run(&why);
  if (!document) {
    if (error != nullptr) *error = path + ": PyTorch snapshot: " + why;
    return std::nullopt;
  }
  document->path = path;
  return document;
}

}  // namespace

std::optional<Document> parse_torch_snapshot(std::string_view bytes, const std::string& path,
                                             std::string* error) {
  std::string why;
  const std::optional<Pickle> pickle = pickle::read(bytes, &why);
  return convert(pickle, bytes.size(), std::move(why), path, error);
}

std::optional<Document> read_torch_snapshot(const std::string& path, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<Document> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return fail("not a regular file");
  if (info.st_size > kMaxFile) return fail("too large for a PyTorch snapshot (2 GiB at most)");
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail(std::strerror(errno));
  std::string bytes(static_cast<std::size_t>(info.st_size), '\0');
  if (!file.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    return fail("cannot be read");
  std::string why;
  std::optional<Pickle> pickle = pickle::read(bytes, &why);
  const std::size_t size = bytes.size();
  std::string().swap(bytes);  // the pickle holds its own copy of every string
  return convert(pickle, size, std::move(why), path, error);
}

}  // namespace gpumem::detail::attribution
