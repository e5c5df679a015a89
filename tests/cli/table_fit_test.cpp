// `list` and `watch` tables fitted to a width: every line fits, the essential columns stay, the
// bars show the devices' memory; and the pieces (text width, bars) on their own.
#include <gtest/gtest.h>

#include <sstream>

#include "bar.hpp"
#include "snapshot_view.hpp"
#include "text_width.hpp"

namespace gpumem::cli {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

DeviceSnapshot device(int ordinal, unsigned nvml_index, std::string name, std::string uuid,
                      std::string pci, std::uint64_t total_mib, std::uint64_t used_mib,
                      std::uint64_t reserved_mib) {
  DeviceSnapshot snapshot;
  snapshot.info.device = ordinal;
  snapshot.info.nvml_index = nvml_index;
  snapshot.info.name = std::move(name);
  snapshot.info.uuid = std::move(uuid);
  snapshot.info.pci_bus_id = std::move(pci);
  snapshot.info.memory.total = total_mib * kMiB;
  snapshot.info.memory.used = used_mib * kMiB;
  snapshot.info.memory.reserved = reserved_mib * kMiB;
  snapshot.info.memory.free = (total_mib - used_mib - reserved_mib) * kMiB;
  snapshot.memory_known = true;
  return snapshot;
}

// Three devices, one with a long name, and a process on the first.
std::vector<DeviceSnapshot> three_devices() {
  std::vector<DeviceSnapshot> snapshot;
  snapshot.push_back(device(0, 1, "NVIDIA H200", "GPU-bbbbbbbb-2222-4000-8000-000000000001",
                            "00000000:19:00.0", 143771, 71885, 542));
  snapshot.push_back(device(1, 0, "NVIDIA A100-SXM4-40GB",
                            "GPU-aaaaaaaa-1111-4000-8000-000000000000", "00000000:3B:00.0", 40960,
                            0, 256));
  snapshot.push_back(device(2, 2, "NVIDIA RTX 6000 Ada Generation",
                            "GPU-cccccccc-3333-4000-8000-000000000002", "00000000:5E:00.0", 49140,
                            45000, 400));
  snapshot[0].processes.push_back({4242, "python3", 71885 * kMiB});
  return snapshot;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

const TextStyle kUnicode{true, false};
const TextStyle kAscii{false, false};

// The line of the devices table that starts with the device's ordinal.
std::string device_row(const std::vector<std::string>& lines, int ordinal) {
  const std::string start = std::to_string(ordinal) + "  ";
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::size_t first = lines[i].find_first_not_of(' ');
    if (first != std::string::npos && lines[i].compare(first, start.size(), start) == 0) {
      return lines[i];
    }
  }
  return {};
}

void expect_fits_with_essentials(const std::string& table, std::size_t width, bool watch) {
  const std::vector<std::string> lines = lines_of(table);
  ASSERT_GE(lines.size(), 5u) << table;
  for (const std::string& line : lines) {
    EXPECT_LE(display_width(line), width) << "at " << width << " columns:\n" << table;
  }
  const std::string& header = lines[0];
  for (const char* column : {"GPU", "NAME", "TOTAL", "USED", "FREE", "USED OF TOTAL"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column << " at " << width << ":\n"
                                                      << table;
  }
  EXPECT_EQ(header.find("PEAK USED") != std::string::npos, watch) << table;
  const std::string h200 = device_row(lines, 0), a100 = device_row(lines, 1),
                    rtx = device_row(lines, 2);
  // The devices' own figures: total, used, free.
  EXPECT_NE(h200.find("H200"), std::string::npos) << table;
  EXPECT_NE(h200.find("140.4 GiB  70.2 GiB  69.7 GiB"), std::string::npos) << table;
  EXPECT_NE(a100.find("A100-SXM4-40GB"), std::string::npos) << table;
  EXPECT_NE(a100.find("40.0 GiB       0 B  39.8 GiB"), std::string::npos) << table;
  EXPECT_NE(rtx.find("RTX 6000"), std::string::npos) << table;
  EXPECT_NE(rtx.find("48.0 GiB  43.9 GiB   3.7 GiB"), std::string::npos) << table;
  // The bars: half the H200 (71885 of 143771 MiB, 50.0 %: 50 % rounded up), none of the A100.
  EXPECT_NE(h200.find("]  50%"), std::string::npos) << table;
  EXPECT_NE(h200.find("[█"), std::string::npos) << table;
  EXPECT_NE(a100.find("]   0%"), std::string::npos) << table;
  EXPECT_NE(rtx.find("]  92%"), std::string::npos) << table;
  EXPECT_NE(table.find("4242  python3"), std::string::npos) << table;
}

TEST(TableFit, ListAt80ColumnsKeepsTheEssentialsAndDropsIdentifiers) {
  const std::string table = snapshot_table(three_devices(), {}, {80, kUnicode});
  expect_fits_with_essentials(table, 80, false);
  EXPECT_EQ(table.find("UUID"), std::string::npos) << table;
  EXPECT_EQ(table.find("PCI BUS ID"), std::string::npos) << table;
  EXPECT_EQ(table.find("RESERVED"), std::string::npos) << table;
}

TEST(TableFit, ListAt120ColumnsShortensUuidsAndDropsPciFirst) {
  const std::string table = snapshot_table(three_devices(), {}, {120, kUnicode});
  expect_fits_with_essentials(table, 120, false);
  EXPECT_EQ(table.find("PCI BUS ID"), std::string::npos) << table;
  EXPECT_EQ(table.find("00000000:19:00.0"), std::string::npos) << table;
  // A unique prefix, which CUDA_VISIBLE_DEVICES accepts, not the whole UUID.
  EXPECT_NE(table.find("GPU-bbbbbbbb "), std::string::npos) << table;
  EXPECT_EQ(table.find("GPU-bbbbbbbb-2222"), std::string::npos) << table;
  EXPECT_NE(table.find("NVIDIA RTX 6000 Ada Generation"), std::string::npos) << table;
  EXPECT_NE(table.find("RESERVED"), std::string::npos) << table;
}

TEST(TableFit, ListAt200ColumnsShowsEverythingInFull) {
  const std::string table = snapshot_table(three_devices(), {}, {200, kUnicode});
  expect_fits_with_essentials(table, 200, false);
  const std::string h200 = lines_of(table)[1];
  EXPECT_NE(table.find("GPU-bbbbbbbb-2222-4000-8000-000000000001  00000000:19:00.0"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("69.7 GiB  542.0 MiB  [████"), std::string::npos) << table;
  // The bar takes the room left, up to 40 cells.
  EXPECT_EQ(display_width(h200.substr(h200.find('['))), bar_width(40)) << table;
}

TEST(TableFit, WatchAt80120And200ColumnsKeepsThePeak) {
  PeakByDevice peaks{{0, 100000 * kMiB}, {1, 20480 * kMiB}, {2, 45000 * kMiB}};
  for (std::size_t width : {80, 120, 200}) {
    const std::string table = snapshot_table(three_devices(), peaks, {width, kUnicode});
    expect_fits_with_essentials(table, width, true);
    EXPECT_NE(device_row(lines_of(table), 0).find("97.7 GiB"), std::string::npos) << table;
    EXPECT_NE(device_row(lines_of(table), 1).find("20.0 GiB"), std::string::npos) << table;
    // The peak beyond the used share, shaded, and what the shading means.
    EXPECT_NE(device_row(lines_of(table), 1).find("[░"), std::string::npos) << table;
    EXPECT_NE(table.find("░ highest used since the watch began"), std::string::npos) << table;
  }
}

TEST(TableFit, WideShowsEveryColumnUntruncated) {
  const std::string table = snapshot_table(three_devices(), {}, {std::nullopt, kAscii});
  const std::vector<std::string> lines = lines_of(table);
  EXPECT_NE(lines[0].find("NVML"), std::string::npos);
  EXPECT_NE(lines[0].find("PCI BUS ID"), std::string::npos);
  EXPECT_NE(lines[0].find("RESERVED"), std::string::npos);
  EXPECT_NE(table.find("NVIDIA RTX 6000 Ada Generation  GPU-cccccccc-3333-4000-8000-000000000002  "
                       "00000000:5E:00.0"),
            std::string::npos)
      << table;
  // ASCII bars, 20 cells: half of the H200.
  EXPECT_NE(lines[1].find("[##########          ]  50%"), std::string::npos) << table;
}

TEST(TableFit, NarrowerThan80CutsNamesBeforeLosingAnEssentialColumn) {
  const std::string table = snapshot_table(three_devices(), {}, {64, kAscii});
  const std::vector<std::string> lines = lines_of(table);
  for (const std::string& line : lines) EXPECT_LE(display_width(line), 64u) << table;
  EXPECT_NE(lines[0].find("NAME"), std::string::npos) << table;
  EXPECT_NE(lines[0].find("FREE"), std::string::npos) << table;
  EXPECT_NE(table.find("RTX 6000"), std::string::npos) << table;
  EXPECT_NE(table.find("~ "), std::string::npos) << table;  // cut, and marked so
}

TEST(TableFit, ShortUuidsStayUnique) {
  std::vector<DeviceSnapshot> snapshot = three_devices();
  snapshot[1].info.uuid = "GPU-bbbbbbbb-2299-4000-8000-000000000000";
  const std::string table = snapshot_table(snapshot, {}, {120, kUnicode});
  EXPECT_NE(table.find("GPU-bbbbbbbb-222 "), std::string::npos) << table;
  EXPECT_NE(table.find("GPU-bbbbbbbb-229 "), std::string::npos) << table;
  EXPECT_NE(table.find("GPU-cccccccc-333 "), std::string::npos) << table;
}

TEST(TableFit, UnknownMemoryShowsQuestionMarks) {
  std::vector<DeviceSnapshot> snapshot = three_devices();
  snapshot[1].memory_known = false;
  snapshot[1].info.memory = {};
  const std::string table = snapshot_table(snapshot, {}, {80, kAscii});
  EXPECT_NE(device_row(lines_of(table), 1).find("?         ?         ?  ?"), std::string::npos)
      << table;
}

TEST(TextWidth, CountsColumnsNotBytes) {
  EXPECT_EQ(display_width("NVIDIA H200"), 11u);
  EXPECT_EQ(display_width("█▍░"), 3u);
  EXPECT_EQ(display_width("\033[32m██\033[0m"), 2u);
  EXPECT_EQ(display_width("漢字"), 4u);       // East Asian wide
  EXPECT_EQ(display_width("e\xcc\x81"), 1u);  // e and a combining acute accent
  EXPECT_EQ(truncate_to_width("NVIDIA A100-SXM4-40GB", 10, "…"), "NVIDIA A1…");
  EXPECT_EQ(truncate_to_width("漢字漢字", 5, "~"), "漢字~");
  EXPECT_EQ(truncate_to_width("short", 10, "…"), "short");
}

TEST(TextWidth, PrintableShowsControlsAndInvalidBytesAsEscapes) {
  EXPECT_EQ(printable("python3"), "python3");
  EXPECT_EQ(printable("漢字 é"), "漢字 é");
  EXPECT_EQ(printable("a\033[2Jb\tc\x7f"), "a\\x1b[2Jb\\tc\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"), "\\u009b");          // U+009B, the one-byte CSI of C1
  EXPECT_EQ(printable("x\xff\xc3"), "x\\xff\\xc3");     // not UTF-8; cut short
  EXPECT_EQ(display_width(printable("a\u202eb")), 8u);  // "a\u202eb": measured as shown
}

TEST(Bar, SolidUsedShadedPeakRoundedUp) {
  const std::uint64_t gib = 1ull << 30;
  EXPECT_EQ(usage_bar({gib / 2, gib, std::nullopt}, 10, kAscii), "[#####     ]  50%");
  // 3/16 of 8 cells is 1.5 cells: one full cell and half of the next.
  EXPECT_EQ(usage_bar({3 * gib / 16, gib, std::nullopt}, 8, kUnicode), "[█▌      ]  19%");
  // A single byte shows.
  EXPECT_EQ(usage_bar({1, gib, std::nullopt}, 10, kUnicode), "[▏         ]   1%");
  EXPECT_EQ(usage_bar({gib / 4, gib, gib / 2}, 8, kAscii), "[##==    ]  25%");
  EXPECT_EQ(usage_bar({gib / 4, gib, gib / 2}, 8, kUnicode), "[██░░    ]  25%");
  EXPECT_EQ(usage_bar({gib, gib, gib}, 4, kUnicode), "[████] 100%");
  EXPECT_EQ(usage_bar({0, 0, std::nullopt}, 8, kUnicode), "?");
}

TEST(Bar, ColourByShareOnlyWhenAsked) {
  const std::uint64_t gib = 1ull << 30;
  const TextStyle colour{true, true};
  EXPECT_EQ(usage_bar({gib / 4, gib, gib / 2}, 8, colour),
            "[\033[32m██\033[0m\033[2m░░\033[0m    ]  25%");
  EXPECT_NE(usage_bar({gib * 95 / 100, gib, std::nullopt}, 8, colour).find("\033[31m"),
            std::string::npos);
  EXPECT_EQ(usage_bar({gib * 95 / 100, gib, std::nullopt}, 8, kUnicode).find('\033'),
            std::string::npos);
}

}  // namespace
}  // namespace gpumem::cli
