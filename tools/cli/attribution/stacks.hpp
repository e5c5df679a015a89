// A snapshot's live memory by allocating stack: the sums the table and the pprof export show,
// and the icicle tree the SVG draws (root: the whole level; below it the outermost frames).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attribution/document.hpp"

namespace gpumem::cli::attribution {

struct StackTotal {
  std::optional<std::size_t> stack;  // null: the blocks with no stack captured
  std::int64_t bytes = 0;
  std::size_t blocks = 0;
};

// Each stack's bytes and blocks in `snapshot`, most bytes first (equal ones by stack index, the
// blocks without a stack last among equals).
std::vector<StackTotal> stack_totals(const Snapshot& snapshot);

// One box of the icicle: a frame's function (frames of the same function and file under the
// same caller are one box), what the blocks below it hold.
struct IcicleNode {
  enum class Kind { root, frame, no_stack, context, without_block };
  Kind kind = Kind::frame;
  std::optional<std::size_t> frame;  // the first frame merged into it (Kind::frame)
  std::vector<std::int64_t> lines;   // the lines merged, in the order met (at most a few)
  std::int64_t bytes = 0;
  std::size_t blocks = 0;
  std::vector<std::unique_ptr<IcicleNode>> children;  // most bytes first
};

// The root holds the snapshot's level (or its blocks, when they hold more); its children are the
// outermost frames, "no stack captured" and "held without a block".
std::unique_ptr<IcicleNode> icicle_tree(const Document& document, const Snapshot& snapshot);

// The deepest level below `node` (0 for a leaf).
std::size_t icicle_depth(const IcicleNode& node);

// What a box is called: the frame's function, or the name of the special boxes.
std::string node_name(const Document& document, const IcicleNode& node);
// Its full description for a tooltip: the function, file and lines, module, bytes and blocks.
std::string node_details(const Document& document, const IcicleNode& node, std::int64_t total);

}  // namespace gpumem::cli::attribution
