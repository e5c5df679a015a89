// The icicle: the whole level across the top, each row below it the callees of the row above,
// every box as wide as the bytes live under it. Boxes too narrow to see are left out (their
// bytes still count in their callers' width).
#include <cstdio>
#include <functional>

#include "attribution/markup.hpp"
#include "attribution/stacks.hpp"
#include "attribution/views.hpp"
#include "format.hpp"
#include "text_width.hpp"

namespace gpumem::cli::attribution {
namespace {

constexpr double kWidth = 1200, kMargin = 10, kTop = 58, kRow = 18, kBottom = 24;
constexpr double kCharWidth = 7.0;  // 12 px monospace, about
constexpr double kNarrowest = 0.5;  // px: boxes narrower than this are not drawn

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// Warm colours for code (the same function always the same colour), greys for the rest.
std::string colour(const std::string& name, IcicleNode::Kind kind) {
  if (kind == IcicleNode::Kind::root) return "#c8c8c8";
  if (kind != IcicleNode::Kind::frame) return "#b0b8c8";
  const std::size_t hash = std::hash<std::string>{}(name);
  const int red = 205 + static_cast<int>(hash % 50);
  const int green = 80 + static_cast<int>((hash / 50) % 130);
  const int blue = 40 + static_cast<int>((hash / 6500) % 50);
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", red, green, blue);
  return text;
}

}  // namespace

std::string icicle_svg(const Document& document, const Snapshot& snapshot) {
  const std::unique_ptr<IcicleNode> root = icicle_tree(document, snapshot);
  const std::size_t depth = icicle_depth(*root) + 1;
  const double height = kTop + static_cast<double>(depth) * kRow + kBottom;
  const double scale =
      root->bytes > 0 ? (kWidth - 2 * kMargin) / static_cast<double>(root->bytes) : 0;
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
      number(kWidth) + "\" height=\"" + number(height) + "\" viewBox=\"0 0 " + number(kWidth) +
      " " + number(height) +
      "\" font-family=\"monospace\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + number(kMargin) +
         "\" y=\"22\" font-family=\"sans-serif\" font-size=\"15\" "
         "font-weight=\"bold\">" +
         escape_markup("Live GPU memory by allocating stack: " + describe(document, snapshot)) +
         "</text>\n";
  out +=
      "<text x=\"" + number(kMargin) + "\" y=\"42\" font-family=\"sans-serif\">" +
      escape_markup(
          "level " + format_bytes(snapshot.level_bytes) + ", " + format_bytes(snapshot.live_bytes) +
          " in " + std::to_string(snapshot.blocks.size()) + " live blocks, " +
          (snapshot.context_bytes ? format_bytes(*snapshot.context_bytes) + " context and modules, "
                                  : std::string()) +
          format_bytes(snapshot.held_without_block()) +
          " held without a block; outermost frames at the top, width by bytes") +
      "</text>\n";
  // Drawn without recursion: stacks may be deeper than the native stack likes.
  struct Pending {
    const IcicleNode* node;
    double x;
    std::size_t row;
  };
  std::vector<Pending> pending{{root.get(), kMargin, 0}};
  while (!pending.empty()) {
    const Pending at = pending.back();
    pending.pop_back();
    const double width = static_cast<double>(at.node->bytes) * scale;
    if (width < kNarrowest) continue;
    const double y = kTop + static_cast<double>(at.row) * kRow;
    const std::string name = node_name(document, *at.node);
    out += "<g><title>" + escape_markup(node_details(document, *at.node, root->bytes)) +
           "</title><rect x=\"" + number(at.x) + "\" y=\"" + number(y) + "\" width=\"" +
           number(width) + "\" height=\"" + number(kRow - 1) + "\" fill=\"" +
           colour(name, at.node->kind) + "\" rx=\"1\"/>";
    const double room = (width - 6) / kCharWidth;
    if (room >= 3) {
      const std::string label = truncate_to_width(
          at.node->kind == IcicleNode::Kind::root ? "all: " + format_bytes(at.node->bytes) : name,
          static_cast<std::size_t>(room), "\xE2\x80\xA6");
      out += "<text x=\"" + number(at.x + 3) + "\" y=\"" + number(y + kRow - 5) + "\">" +
             escape_markup(label) + "</text>";
    }
    out += "</g>\n";
    double x = at.x;
    for (const auto& child : at.node->children) {
      pending.push_back({child.get(), x, at.row + 1});
      x += static_cast<double>(child->bytes) * scale;
    }
  }
  if (snapshot.blocks.empty() && snapshot.level_bytes == 0) {
    out += "<text x=\"" + number(kMargin) + "\" y=\"" + number(kTop + kRow) +
           "\" font-family=\"sans-serif\">No memory was live.</text>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace gpumem::cli::attribution
