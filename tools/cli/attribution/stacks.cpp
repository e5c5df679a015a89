#include "attribution/stacks.hpp"

#include <algorithm>
#include <map>
#include <string_view>

#include "format.hpp"

namespace gpumem::cli::attribution {
namespace {

constexpr std::size_t kMaxLinesShown = 4;

void sort_children(IcicleNode& node) {
  std::stable_sort(node.children.begin(), node.children.end(),
                   [](const auto& a, const auto& b) { return a->bytes > b->bytes; });
  for (auto& child : node.children) sort_children(*child);
}

// Frames are one box when they name the same code: the function and file (or, unsymbolized,
// the module and address).
std::string code_key(const Frame& frame) {
  if (frame.function) return "f" + *frame.function + '\0' + frame.file.value_or("");
  return "a" + frame.module.value_or("") + '\0' + frame.address.value_or("");
}

}  // namespace

std::vector<StackTotal> stack_totals(const Snapshot& snapshot) {
  std::map<std::size_t, StackTotal> by_stack;
  StackTotal no_stack;
  for (const Block& block : snapshot.blocks) {
    StackTotal& total = block.stack ? by_stack[*block.stack] : no_stack;
    total.stack = block.stack;
    total.bytes += block.bytes;
    ++total.blocks;
  }
  std::vector<StackTotal> totals;
  totals.reserve(by_stack.size() + 1);
  for (const auto& entry : by_stack) totals.push_back(entry.second);
  if (no_stack.blocks > 0) totals.push_back(no_stack);
  std::stable_sort(totals.begin(), totals.end(),
                   [](const StackTotal& a, const StackTotal& b) { return a.bytes > b.bytes; });
  return totals;
}

std::unique_ptr<IcicleNode> icicle_tree(const Document& document, const Snapshot& snapshot) {
  auto root = std::make_unique<IcicleNode>();
  root->kind = IcicleNode::Kind::root;
  std::vector<std::string> keys(document.frames.size());
  for (std::size_t at = 0; at < keys.size(); ++at) keys[at] = code_key(document.frames[at]);
  std::map<std::pair<const IcicleNode*, std::string_view>, IcicleNode*> children;
  for (const StackTotal& total : stack_totals(snapshot)) {
    root->blocks += total.blocks;
    if (!total.stack) {
      auto node = std::make_unique<IcicleNode>();
      node->kind = IcicleNode::Kind::no_stack;
      node->bytes = total.bytes;
      node->blocks = total.blocks;
      root->children.push_back(std::move(node));
      continue;
    }
    const std::vector<std::size_t> stack = shown_stack(document, document.stacks[*total.stack]);
    IcicleNode* at = root.get();
    for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {  // outermost first
      const Frame& code = document.frames[*frame];
      IcicleNode*& next = children[{at, keys[*frame]}];
      if (next == nullptr) {
        at->children.push_back(std::make_unique<IcicleNode>());
        next = at->children.back().get();
        next->frame = *frame;
      }
      if (code.line && next->lines.size() < kMaxLinesShown &&
          std::find(next->lines.begin(), next->lines.end(), *code.line) == next->lines.end())
        next->lines.push_back(*code.line);
      next->bytes += total.bytes;
      next->blocks += total.blocks;
      at = next;
    }
  }
  std::int64_t live = 0;
  for (const auto& child : root->children) live += child->bytes;
  if (snapshot.context_bytes.value_or(0) > 0) {
    auto node = std::make_unique<IcicleNode>();
    node->kind = IcicleNode::Kind::context;
    node->bytes = *snapshot.context_bytes;
    live += node->bytes;
    root->children.push_back(std::move(node));
  }
  if (snapshot.held_without_block() > 0) {
    auto node = std::make_unique<IcicleNode>();
    node->kind = IcicleNode::Kind::without_block;
    node->bytes = snapshot.held_without_block();
    root->children.push_back(std::move(node));
  }
  root->bytes = std::max(snapshot.level_bytes, live);
  sort_children(*root);
  return root;
}

std::size_t icicle_depth(const IcicleNode& node) {
  std::size_t deepest = 0;
  // Iterative: a stack can be deeper than the native call stack allows recursion for.
  std::vector<std::pair<const IcicleNode*, std::size_t>> pending{{&node, 0}};
  while (!pending.empty()) {
    const auto [at, depth] = pending.back();
    pending.pop_back();
    deepest = std::max(deepest, depth);
    for (const auto& child : at->children) pending.emplace_back(child.get(), depth + 1);
  }
  return deepest;
}

std::string node_name(const Document& document, const IcicleNode& node) {
  switch (node.kind) {
    case IcicleNode::Kind::root:
      return "all";
    case IcicleNode::Kind::no_stack:
      return "(no stack captured)";
    case IcicleNode::Kind::context:
      return "(context and modules)";
    case IcicleNode::Kind::without_block:
      return "(held without a block)";
    case IcicleNode::Kind::frame:
      break;
  }
  return frame_function(document.frames[*node.frame]);
}

std::string node_details(const Document& document, const IcicleNode& node, std::int64_t total) {
  std::string text;
  if (node.kind == IcicleNode::Kind::frame) {
    const Frame& frame = document.frames[*node.frame];
    text = frame_function(frame);
    if (frame.file) {
      text += " (" + *frame.file;
      for (std::size_t at = 0; at < node.lines.size(); ++at)
        text += (at == 0 ? ":" : ", ") + std::to_string(node.lines[at]);
      text += ")";
    }
    if (frame.module) text += " in " + *frame.module;
    if (!frame.function && frame.address) text += " at " + *frame.address;
  } else if (node.kind == IcicleNode::Kind::context) {
    text = "context and modules (NVML's figure for the process beyond its blocks)";
  } else if (node.kind == IcicleNode::Kind::without_block) {
    text = "held without a block (context, pool reservations beyond their blocks, rounding)";
  } else {
    text = node_name(document, node);
  }
  text += ": " + format_bytes(node.bytes) + " (" + std::to_string(node.bytes) + " bytes, " +
          format_share(node.bytes, total) + ")";
  if (node.kind != IcicleNode::Kind::without_block && node.kind != IcicleNode::Kind::context)
    text += " in " + std::to_string(node.blocks) + (node.blocks == 1 ? " block" : " blocks");
  return text;
}

}  // namespace gpumem::cli::attribution
