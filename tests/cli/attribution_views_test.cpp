// The views of an attribution document: the top-N table, the SVG icicle (parsed by Python's XML
// parser), the pprof profile (decoded with the same message definitions) and the HTML's
// embedding, on documents whose stacks and sizes are known.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "attribution/document.hpp"
#include "attribution/profile.pb.h"
#include "attribution/views.hpp"
#include "cli/attribution_documents.hpp"
#include "cli/command_runner.hpp"
#include "text_width.hpp"

namespace gpumem::testing {
namespace {

namespace attr = gpumem::cli::attribution;

attr::Document read(const DocumentBuilder& doc) {
  std::string error;
  auto document = attr::parse_document(doc.text(), "snap.json", &error);
  EXPECT_TRUE(document) << error;
  return document ? std::move(*document) : attr::Document{};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The table row whose text holds `needle`.
std::string row_with(const std::string& table, const std::string& needle) {
  for (const std::string& line : lines_of(table)) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

TEST(AttributionTable, NamesTheStacksHoldingTheMostAtThePeak) {
  const attr::Document document = read(known_document());
  const std::string table = attr::top_table(document, document.snapshots[0], 10, {});
  const std::vector<std::string> lines = lines_of(table);
  ASSERT_GE(lines.size(), 9u) << table;
  EXPECT_EQ(lines[0], "peak of scope run on GPU 0 (NVIDIA H200), pid 4242, at 1.250 s");
  EXPECT_EQ(lines[1],
            "level 200.0 MiB: 180.0 MiB in 5 live blocks from 4 stacks, 20.0 MiB held without a "
            "block");
  // Most bytes first: train_step's two blocks, load_weights, loader, the blocks without a stack.
  EXPECT_NE(lines[4].find("100.0 MiB  50.0%       2  train_step (train.cpp:42)"), std::string::npos)
      << table;
  EXPECT_NE(lines[4].find("main"), std::string::npos);
  EXPECT_NE(lines[5].find("50.0 MiB  25.0%       1  load_weights (weights.cpp:99)"),
            std::string::npos)
      << table;
  EXPECT_NE(lines[6].find("20.0 MiB  10.0%       1  loader (weights.cpp:12)"), std::string::npos);
  EXPECT_NE(lines[6].find("load_weights < main"), std::string::npos) << table;
  EXPECT_NE(lines[7].find("10.0 MiB   5.0%       1  (no stack captured)"), std::string::npos);
  EXPECT_NE(lines[8].find("20.0 MiB  10.0%       -  (held without a block)"), std::string::npos)
      << table;
}

// The C runtime under main says nothing: named (_start, __libc_start_main) or, without the C
// library's debug symbols, a frame of libc.so.6 that has no name. A libc frame above main (a
// callback from qsort) is the program's own path, and stays.
TEST(AttributionTable, TheCRuntimeUnderMainIsLeftOutOfTheCallers) {
  DocumentBuilder doc;
  const std::size_t alloc = doc.frame("alloc", "a.cpp", 3);
  const std::size_t compare = doc.frame("compare", "a.cpp", 9);
  const std::size_t qsort = doc.unsymbolized_frame("/lib/x86_64-linux-gnu/libc.so.6", "0x3f1a0");
  const std::size_t main = doc.frame("main", "a.cpp", 20);
  const std::size_t call_main =
      doc.unsymbolized_frame("/lib/x86_64-linux-gnu/libc.so.6", "0x2724a");
  const std::size_t start_main = doc.frame("__libc_start_main", "", 0);
  const std::size_t start = doc.frame("_start", "", 0);
  const std::size_t stack = doc.stack({alloc, compare, qsort, main, call_main, start_main, start});
  doc.block(doc.snapshot("peak", kMiB), kMiB, static_cast<long long>(stack));
  const attr::Document document = read(doc);
  EXPECT_EQ(attr::callers(document, document.stacks[0], " < "), "compare < 0x3f1a0 < main");
}

TEST(AttributionTable, TopNGathersTheRestInOneRow) {
  const attr::Document document = read(known_document());
  const std::string table = attr::top_table(document, document.snapshots[0], 2, {});
  EXPECT_NE(row_with(table, "train_step").find("100.0 MiB"), std::string::npos);
  EXPECT_NE(row_with(table, "load_weights (weights").find("50.0 MiB"), std::string::npos);
  EXPECT_EQ(row_with(table, "loader ("), "") << table;
  const std::string rest = row_with(table, "(2 other stacks)");
  EXPECT_NE(rest.find("30.0 MiB  15.0%       2"), std::string::npos) << table;
}

TEST(AttributionTable, AnOutOfMemorySnapshotShowsTheRequestAndTheOtherProcesses) {
  const attr::Document document = read(known_document());
  const std::string table = attr::top_table(document, document.snapshots[1], 10, {});
  EXPECT_NE(table.find("failed: 16.0 GiB (device) with CUDA_ERROR_OUT_OF_MEMORY; the device had "
                       "1.0 GiB free of 140.4 GiB"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("requested by train_step (train.cpp:42) < main"), std::string::npos);
  EXPECT_NE(row_with(table, "1  train_step (").find("100.0 MiB  66.7%"), std::string::npos)
      << table;
  EXPECT_NE(row_with(table, "other-job").find("777"), std::string::npos);
  EXPECT_NE(row_with(table, "other-job").find("130.0 GiB"), std::string::npos);
  // Listed without saying when (another writer): the list, and no age.
  EXPECT_NE(table.find("1 other process held 130.0 GiB on the device (NVML's list):"),
            std::string::npos)
      << table;
}

TEST(AttributionTable, SaysWhenTheOtherProcessesWereListedAndWhetherTheyWereTheRuns) {
  DocumentBuilder doc = known_document();
  doc.json()["snapshots"][1]["other_processes_age_s"] = 0.012;
  doc.json()["snapshots"][1]["other_processes"][0]["in_run"] = true;
  doc.json()["snapshots"][1]["other_processes"][0]["rank"] = 3;
  doc.other_process(1, 778, "stranger", 2ll << 30);
  const auto failure_table = [&doc] {
    const attr::Document document = read(doc);
    return attr::top_table(document, document.snapshots[1], 10, {});
  };
  std::string table = failure_table();
  EXPECT_NE(table.find("2 other processes held 132.0 GiB on the device (NVML's list 12 ms before "
                       "the failure):"),
            std::string::npos)
      << table;
  EXPECT_NE(row_with(table, "777").find("other-job (this run, rank 3)"), std::string::npos)
      << table;
  EXPECT_EQ(row_with(table, "778").find("this run"), std::string::npos) << table;

  // Read, and nobody else there.
  doc.json()["snapshots"][1]["other_processes"] = nlohmann::json::array();
  table = failure_table();
  EXPECT_NE(table.find("No other process held the device (NVML's list 12 ms before the failure)."),
            std::string::npos)
      << table;
  // Not read: unknown, which is not the same as nobody.
  doc.json()["snapshots"][1]["other_processes_age_s"] = nullptr;
  table = failure_table();
  EXPECT_NE(
      table.find("Other processes on the device: unknown (NVML was not read at the failure)."),
      std::string::npos)
      << table;
  EXPECT_EQ(table.find("No other process"), std::string::npos) << table;
}

TEST(AttributionTable, FitsTheWidthAndPrintsNoControlCharacters) {
  DocumentBuilder doc = known_document();
  const std::size_t evil = doc.frame("evil\x1b[31mred\x07\x01" + std::string(300, 'T'), "e.cpp", 3);
  const std::size_t stack = doc.stack({evil, 0});
  doc.block(0, 1, static_cast<long long>(stack));
  doc.json()["snapshots"][0]["level_bytes"] = 200 * kMiB + 1;
  const attr::Document document = read(doc);
  for (std::size_t width : {40u, 60u, 100u}) {
    const std::string table = attr::top_table(document, document.snapshots[0], 10, {width, {}});
    for (const std::string& line : lines_of(table))
      EXPECT_LE(gpumem::cli::display_width(line), width) << line;
    EXPECT_EQ(table.find('\x1b'), std::string::npos);
    EXPECT_EQ(table.find('\x07'), std::string::npos);
    EXPECT_NE(table.find("train_step"), std::string::npos) << table;
  }
}

TEST(AttributionTable, AnEmptySnapshotSaysSo) {
  DocumentBuilder doc;
  doc.snapshot("peak", 0);
  const attr::Document document = read(doc);
  const std::string table = attr::top_table(document, document.snapshots[0], 10, {});
  EXPECT_NE(table.find("level 0 B: 0 B in 0 live blocks from 0 stacks"), std::string::npos);
  EXPECT_NE(table.find("No memory was live."), std::string::npos) << table;
}

// The SVG parsed by Python's xml.etree: each box's title and width, one per line.
struct Box {
  std::string title;
  double width = 0;
  std::string label;
};

std::vector<Box> parse_svg(const std::string& svg, std::string* failure) {
  const std::string folder = temporary_folder();
  const std::string path = folder + "/icicle.svg", script = folder + "/parse.py";
  std::ofstream(path, std::ios::binary) << svg;
  std::ofstream(script) << R"(import json, sys
import xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
for g in root.findall("s:g", ns):
    text = g.find("s:text", ns)
    print(json.dumps({"title": g.find("s:title", ns).text, "width": float(g.find("s:rect", ns).get("width")),
                      "label": text.text if text is not None else ""}))
)";
  const CommandResult result = run_command({"python3", script, path});
  if (result.exit_code != 0) {
    *failure = result.err;
    return {};
  }
  std::vector<Box> boxes;
  for (const std::string& line : lines_of(result.out)) {
    const auto json = nlohmann::json::parse(line);
    boxes.push_back({json["title"], json["width"], json["label"]});
  }
  return boxes;
}

const Box* box_titled(const std::vector<Box>& boxes, const std::string& start) {
  for (const Box& box : boxes) {
    if (box.title.rfind(start, 0) == 0) return &box;
  }
  return nullptr;
}

TEST(AttributionSvg, AnIcicleWhoseBoxesAreAsWideAsTheirBytes) {
  const attr::Document document = read(known_document());
  const std::string svg = attr::icicle_svg(document, document.snapshots[0]);
  std::string failure;
  const std::vector<Box> boxes = parse_svg(svg, &failure);
  ASSERT_FALSE(boxes.empty()) << failure;
  const Box* all = box_titled(boxes, "all: 200.0 MiB");
  const Box* main = box_titled(boxes, "main (train.cpp:7)");
  const Box* train = box_titled(boxes, "train_step (train.cpp:42)");
  const Box* held = box_titled(boxes, "held without a block");
  ASSERT_TRUE(all && main && train && held) << svg;
  EXPECT_EQ(train->title,
            "train_step (train.cpp:42) in /opt/app/train: 100.0 MiB (104857600 bytes, 50.0%) in 2 "
            "blocks");
  EXPECT_NEAR(train->width / all->width, 0.5, 1e-3);
  EXPECT_NEAR(main->width / all->width, 170.0 / 200.0, 1e-3);
  EXPECT_NEAR(held->width / all->width, 0.1, 1e-3);
  EXPECT_EQ(train->label, "train_step");
  EXPECT_NE(svg.find("Live GPU memory by allocating stack: peak of scope run on GPU 0"),
            std::string::npos);
}

TEST(AttributionSvg, HostileNamesAreEscapedAndLongOnesCut) {
  DocumentBuilder doc;
  std::string long_name = "std::vector<std::map<std::string, ";
  for (int i = 0; i < 200; ++i) long_name += "std::pair<int, float>, ";
  long_name += "std::allocator<char>>> make_tensors()";
  const std::string hostile[] = {"</title></g><script>alert(1)</script>", "say \"hi\" & 'bye'",
                                 std::string("ctl\x01\x1b[0m\x7f"), long_name};
  const std::size_t main = doc.frame("main", "m.cpp", 1);
  const std::size_t peak = doc.snapshot("peak", 400 * kMiB);
  for (const std::string& name : hostile) {
    const std::size_t frame = doc.frame(name, "h.cpp", 2);
    doc.block(peak, 100 * kMiB, static_cast<long long>(doc.stack({frame, main})));
  }
  const attr::Document document = read(doc);
  const std::string svg = attr::icicle_svg(document, document.snapshots[0]);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  std::string failure;
  const std::vector<Box> boxes = parse_svg(svg, &failure);
  ASSERT_FALSE(boxes.empty()) << failure;
  EXPECT_TRUE(box_titled(boxes, hostile[0] + " (h.cpp:2)")) << svg;
  EXPECT_TRUE(box_titled(boxes, hostile[1] + " (h.cpp:2)"));
  EXPECT_TRUE(box_titled(boxes, "ctl\uFFFD\uFFFD[0m\uFFFD (h.cpp:2)")) << svg;
  const Box* templated = box_titled(boxes, long_name + " (h.cpp:2)");
  ASSERT_TRUE(templated);
  EXPECT_LT(templated->label.size(), 60u);
  EXPECT_EQ(templated->label.rfind("std::vector<std::map<", 0), 0u);
}

TEST(AttributionSvg, ManyAndDeepStacksStayWellFormed) {
  DocumentBuilder doc = many_and_deep_stacks(64, 4ll << 30);
  const attr::Document document = read(doc);
  const auto start = std::chrono::steady_clock::now();
  const std::string svg = attr::icicle_svg(document, document.snapshots[0]);
  const std::string table = attr::top_table(document, document.snapshots[0], 5, {});
  std::string error;
  EXPECT_TRUE(attr::pprof_profile(document, document.snapshots[0], &error)) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  std::string failure;
  const std::vector<Box> boxes = parse_svg(svg, &failure);
  ASSERT_FALSE(boxes.empty()) << failure;
  // The deep stack's 200 frames, outermost at the top: level_199 first, level_0 at the bottom.
  EXPECT_TRUE(box_titled(boxes, "level_199 (deep.cpp:199)"));
  EXPECT_TRUE(box_titled(boxes, "level_0 (deep.cpp:0)"));
  EXPECT_TRUE(box_titled(boxes, "main (m.cpp:1)"));  // the 10,000 stacks' caller
  EXPECT_NE(row_with(table, "level_0 (deep.cpp:0)").find("4.0 GiB"), std::string::npos) << table;
  EXPECT_NE(row_with(table, "alloc_9999 (many.cpp").find("625.0 KiB"), std::string::npos) << table;
  EXPECT_NE(table.find("(9996 other stacks)"), std::string::npos);
}

TEST(AttributionSvg, AnEmptySnapshotIsAnEmptyPicture) {
  DocumentBuilder doc;
  doc.snapshot("peak", 0);
  const attr::Document document = read(doc);
  const std::string svg = attr::icicle_svg(document, document.snapshots[0]);
  EXPECT_NE(svg.find("No memory was live."), std::string::npos);
  std::string failure;
  parse_svg(svg, &failure);
  EXPECT_EQ(failure, "");
}

gpumem::pprof::Profile decode(const std::string& gzipped) {
  std::string data(gzipped.size() * 20 + 4096, '\0');
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzipped.data()));
  stream.avail_in = static_cast<uInt>(gzipped.size());
  stream.next_out = reinterpret_cast<Bytef*>(data.data());
  stream.avail_out = static_cast<uInt>(data.size());
  EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END);
  data.resize(stream.total_out);
  inflateEnd(&stream);
  gpumem::pprof::Profile profile;
  EXPECT_TRUE(profile.ParseFromString(data));
  return profile;
}

TEST(AttributionPprof, SamplesHoldEachStacksBlocksAndBytes) {
  const attr::Document document = read(known_document());
  std::string error;
  const auto gzipped = attr::pprof_profile(document, document.snapshots[0], &error);
  ASSERT_TRUE(gzipped) << error;
  ASSERT_GE(gzipped->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*gzipped)[0]), 0x1f);  // gzip's magic
  EXPECT_EQ(static_cast<unsigned char>((*gzipped)[1]), 0x8b);
  const gpumem::pprof::Profile profile = decode(*gzipped);
  const auto& strings = profile.string_table();
  ASSERT_GT(strings.size(), 0);
  EXPECT_EQ(strings[0], "");
  ASSERT_EQ(profile.sample_type_size(), 2);
  EXPECT_EQ(strings[profile.sample_type(0).type()], "inuse_objects");
  EXPECT_EQ(strings[profile.sample_type(0).unit()], "count");
  EXPECT_EQ(strings[profile.sample_type(1).type()], "inuse_space");
  EXPECT_EQ(strings[profile.sample_type(1).unit()], "bytes");
  EXPECT_EQ(strings[profile.default_sample_type()], "inuse_space");
  // The innermost function of each sample, with its values.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_function;
  std::int64_t total = 0;
  for (const auto& sample : profile.sample()) {
    ASSERT_GT(sample.location_id_size(), 0);
    const auto location =
        std::find_if(profile.location().begin(), profile.location().end(),
                     [&](const auto& entry) { return entry.id() == sample.location_id(0); });
    ASSERT_NE(location, profile.location().end());
    const auto function = std::find_if(
        profile.function().begin(), profile.function().end(),
        [&](const auto& entry) { return entry.id() == location->line(0).function_id(); });
    ASSERT_NE(function, profile.function().end());
    auto& values = by_function[strings[function->name()]];
    values.first += sample.value(0);
    values.second += sample.value(1);
    total += sample.value(1);
  }
  EXPECT_EQ(by_function["train_step"], (std::pair<std::int64_t, std::int64_t>{2, 100 * kMiB}));
  EXPECT_EQ(by_function["load_weights"], (std::pair<std::int64_t, std::int64_t>{1, 50 * kMiB}));
  EXPECT_EQ(by_function["loader"], (std::pair<std::int64_t, std::int64_t>{1, 20 * kMiB}));
  EXPECT_EQ(by_function["(no stack captured)"],
            (std::pair<std::int64_t, std::int64_t>{1, 10 * kMiB}));
  EXPECT_EQ(by_function["(held without a block)"],
            (std::pair<std::int64_t, std::int64_t>{0, 20 * kMiB}));
  EXPECT_EQ(total, 200 * kMiB);  // the level, all of it
}

// The JSON embedded in the HTML: nothing in it ends its script element, and it reads back as
// the document.
TEST(AttributionHtml, EmbedsTheDocumentSafely) {
  DocumentBuilder doc = known_document();
  const std::size_t evil =
      doc.frame("</script><script>alert(1)</script><!-- \u2028\u2029 & \"", "x.js", 1);
  doc.block(0, 1, static_cast<long long>(doc.stack({evil})));
  doc.json()["snapshots"][0]["level_bytes"] = 200 * kMiB + 1;
  doc.json()["command"] = "run </SCRIPT > now";
  const attr::Document document = read(doc);
  const std::string html = attr::html_report(document, 0, 1);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(html.find("<!-- "), std::string::npos);
  EXPECT_EQ(html.find("\u2028"), std::string::npos);
  EXPECT_EQ(html.find("</SCRIPT"), std::string::npos);
  // Nothing from the network: no element or style loads anything.
  for (const char* loads : {"src=", "href=", "url(", "@import", "fetch(", "XMLHttpRequest"})
    EXPECT_EQ(html.find(loads), std::string::npos) << loads;
  const std::string open = "<script type=\"application/json\" id=\"gpumem-attribution\">";
  const std::size_t start = html.find(open);
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = html.find("</script>", start);
  const auto embedded =
      nlohmann::ordered_json::parse(html.substr(start + open.size(), end - start - open.size()));
  EXPECT_EQ(embedded, attr::document_json(document));
}

}  // namespace
}  // namespace gpumem::testing
