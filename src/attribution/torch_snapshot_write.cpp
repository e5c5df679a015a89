// gpumem's document as a PyTorch memory snapshot: the schema torch/cuda/memory.py documents for
// `_snapshot()` (current form) and the list of segments PyTorch 1.13's torch/cuda/_memory_viz.py
// reads (older form).
#include <algorithm>
#include <cmath>
#include <map>

#include "attribution/pickle.hpp"
#include "gpumem/internal/torch_snapshot.hpp"

namespace gpumem::detail::attribution {
namespace {

// PyTorch's large segments are multiples of 2 MiB: the segments gpumem adds start on one.
constexpr std::int64_t kSegmentAlignment = 2 << 20;

// Python decodes a pickle's strings as UTF-8: any byte that is not becomes U+FFFD.
std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = lead < 0x80         ? 1
                         : (lead >> 5) == 6  ? 2
                         : (lead >> 4) == 14 ? 3
                         : (lead >> 3) == 30 ? 4
                                             : 0;
    bool valid = length > 0 && at + length <= text.size();
    for (std::size_t i = 1; valid && i < length; ++i)
      valid = (static_cast<unsigned char>(text[at + i]) & 0xc0) == 0x80;
    if (valid && length > 1) {
      // No overlong forms, surrogates or values beyond U+10FFFF.
      std::uint32_t code = lead & (0xff >> (length + 1));
      for (std::size_t i = 1; i < length; ++i)
        code = (code << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3f);
      const std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
      valid = code >= least[length] && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff);
    }
    if (valid) {
      out.append(text, at, length);
      at += length;
    } else {
      out += "\xef\xbf\xbd";
      ++at;
    }
  }
  return out;
}

std::int64_t parse_address(const std::string& text) {
  std::int64_t value = 0;
  if (!text.starts_with("0x") || text.size() > 18 || text.size() == 2) return -1;
  for (std::size_t at = 2; at < text.size(); ++at) {
    const char c = text[at];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return -1;
    value = static_cast<std::int64_t>((static_cast<std::uint64_t>(value) << 4) |
                                      static_cast<std::uint64_t>(digit));
  }
  return value;
}

// One segment of the snapshot: a block of memory and the frames that name it.
struct Piece {
  std::int64_t address = 0, bytes = 0;
  std::optional<std::size_t> stack;  // into the document's stacks
  std::string label;                 // a piece gpumem names itself: its frame's name
  std::optional<std::int64_t> time_us;
};

class SnapshotWriter {
 public:
  SnapshotWriter(const Document& document, TorchForm form) : document_(document), form_(form) {}

  std::string run() {
    // Each device's highest peak snapshot, else its first.
    std::map<int, const Snapshot*> shown;
    for (const Snapshot& snapshot : document_.snapshots) {
      const Snapshot*& chosen = shown[snapshot.device];
      if (chosen == nullptr || (chosen->what != "peak" && snapshot.what == "peak") ||
          (chosen->what == snapshot.what && snapshot.level_bytes > chosen->level_bytes))
        chosen = &snapshot;
    }
    std::map<int, std::vector<Piece>> pieces;
    for (const auto& [device, snapshot] : shown) pieces[device] = pieces_of(*snapshot);

    if (form_ == TorchForm::dict) {
      out_.start_dict();
      out_.text("segments");
    }
    out_.start_list();
    for (const auto& [device, list] : pieces)
      for (const Piece& piece : list) segment(device, piece);
    out_.end_list();
    if (form_ == TorchForm::dict) {
      // device_traces: one list per device ordinal from 0, each live block's allocation an
      // "alloc" action at its time, oldest first.
      out_.text("device_traces");
      out_.start_list();
      const int devices = pieces.empty() ? 0 : pieces.rbegin()->first + 1;
      for (int device = 0; device < devices; ++device) {
        out_.start_list();
        if (const auto found = pieces.find(device); found != pieces.end()) trace(found->second);
        out_.end_list();
      }
      out_.end_list();
      out_.end_dict();
    }
    return out_.finish();
  }

 private:
  const Document& document_;
  TorchForm form_;
  pickle::Writer out_;

  std::vector<Piece> pieces_of(const Snapshot& snapshot) {
    std::vector<Piece> pieces;
    std::int64_t end = 0, next = 0;
    for (const Block& block : snapshot.blocks) {
      const std::int64_t address = parse_address(block.address);
      Piece piece;
      piece.address = address;
      piece.bytes = block.bytes;
      piece.stack = block.stack;
      if (snapshot.time_s >= block.age_s)
        piece.time_us = std::llround((snapshot.time_s - block.age_s) * 1e6);
      if (address >= 0) end = std::max(end, address + block.bytes);
      pieces.push_back(std::move(piece));
    }
    // Blocks without an address of their own, and what the level holds beyond the blocks, after
    // the highest block, each on a segment boundary.
    auto place = [&](std::int64_t bytes) {
      const std::int64_t at =
          (std::max(end, next) + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
      next = at + bytes;
      return at;
    };
    for (Piece& piece : pieces)
      if (piece.address < 0) piece.address = place(piece.bytes);
    if (snapshot.context_bytes.value_or(0) > 0) {
      Piece context;
      context.bytes = *snapshot.context_bytes;
      context.address = place(context.bytes);
      context.label = "<gpumem: the process's context, modules and the driver's rounding>";
      pieces.push_back(std::move(context));
    }
    if (const std::int64_t held = snapshot.held_without_block(); held > 0) {
      Piece rest;
      rest.bytes = held;
      rest.address = place(held);
      rest.label = "<gpumem: held without a block>";
      pieces.push_back(std::move(rest));
    }
    return pieces;
  }

  void frame(const std::string& file, std::int64_t line, const std::string& name) {
    out_.start_dict();
    out_.text("filename");
    out_.text(valid_utf8(file));
    out_.text("line");
    out_.integer(line);
    out_.text("name");
    out_.text(valid_utf8(name));
    out_.end_dict();
  }

  void frames(const Piece& piece) {
    out_.start_list();
    if (!piece.label.empty()) {
      frame("", 0, piece.label);
    } else if (piece.stack && *piece.stack < document_.stacks.size()) {
      for (const std::size_t index : document_.stacks[*piece.stack]) {
        if (index >= document_.frames.size()) continue;
        const Frame& model = document_.frames[index];
        const std::string name = model.function  ? *model.function
                                 : model.address ? *model.address
                                                 : "??";
        frame(model.file     ? *model.file
              : model.module ? *model.module
                             : "??",
              model.line.value_or(0), name);
      }
    }
    out_.end_list();
  }

  void segment(int device, const Piece& piece) {
    out_.start_dict();
    out_.text("device");
    out_.integer(device);
    out_.text("address");
    out_.integer(piece.address);
    for (const char* key : {"total_size", "allocated_size", "active_size", "requested_size"}) {
      out_.text(key);
      out_.integer(piece.bytes);
    }
    out_.text("stream");
    out_.integer(0);
    out_.text("segment_type");
    out_.text("large");
    out_.text("segment_pool_id");
    out_.start_tuple();
    out_.integer(0);
    out_.integer(0);
    out_.end_tuple();
    out_.text("is_expandable");
    out_.boolean(false);
    out_.text("frames");
    out_.start_list();
    out_.end_list();
    out_.text("blocks");
    out_.start_list();
    out_.start_dict();
    out_.text("address");
    out_.integer(piece.address);
    out_.text("size");
    out_.integer(piece.bytes);
    out_.text("requested_size");
    out_.integer(piece.bytes);
    out_.text("state");
    out_.text("active_allocated");
    out_.text("frames");
    frames(piece);
    if (form_ == TorchForm::list) {
      out_.text("history");
      out_.start_list();
      out_.start_dict();
      out_.text("addr");
      out_.integer(piece.address);
      out_.text("real_size");
      out_.integer(piece.bytes);
      out_.text("frames");
      frames(piece);
      out_.end_dict();
      out_.end_list();
    }
    out_.end_dict();
    out_.end_list();
    out_.end_dict();
  }

  void trace(const std::vector<Piece>& pieces) {
    std::vector<const Piece*> timed;
    for (const Piece& piece : pieces)
      if (piece.time_us) timed.push_back(&piece);
    std::stable_sort(timed.begin(), timed.end(),
                     [](const Piece* a, const Piece* b) { return *a->time_us < *b->time_us; });
    for (const Piece* piece : timed) {
      for (const char* action : {"segment_alloc", "alloc"}) {
        out_.start_dict();
        out_.text("action");
        out_.text(action);
        out_.text("addr");
        out_.integer(piece->address);
        out_.text("size");
        out_.integer(piece->bytes);
        out_.text("stream");
        out_.integer(0);
        out_.text("time_us");
        out_.integer(*piece->time_us);
        out_.text("frames");
        frames(*piece);
        out_.end_dict();
      }
    }
  }
};

}  // namespace

std::string torch_snapshot(const Document& document, TorchForm form) {
  return SnapshotWriter(document, form).run();
}

}  // namespace gpumem::detail::attribution
