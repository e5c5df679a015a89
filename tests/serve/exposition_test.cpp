#include "serve/exposition_parser.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "exposition.hpp"
#include "utf8.hpp"

namespace gpumem::serve {
namespace {

using gpumem::testing::parse_exposition;
constexpr std::int64_t kMiB = 1 << 20;

Snapshot two_devices() {
  Snapshot s;
  s.host = "node-7";
  DeviceSample up;
  up.gpu = 0;
  up.uuid = "GPU-bbbbbbbb-2222-4000-8000-000000000001";
  up.name = "NVIDIA H200";
  up.up = true;
  up.memory = {143771ull * kMiB, 143229ull * kMiB - 3 * kMiB, 3ull * kMiB, 542ull * kMiB};
  up.window_peak = 515 * kMiB;
  DeviceSample lost;
  lost.gpu = 1;
  lost.uuid = "GPU-aaaaaaaa-1111-4000-8000-000000000000";
  lost.name = "NVIDIA A100 \"40GB\"\\x";
  lost.up = false;
  lost.memory = {1, 2, 3, 4};  // stale: must not be shown
  lost.window_peak = 99;
  s.devices = {up, lost};
  s.processes = {{0, up.uuid, 4242, "python3", 3 * kMiB}};
  detail::PublishedTrace trace;
  trace.scope = "train step\nline 2";
  trace.pid = 4242;
  trace.uuid = up.uuid;
  trace.unix_ms = 1'700'000'000'123;
  trace.bytes = {Source::sampled, 0, 10 * kMiB, 12 * kMiB, 40 * kMiB, 2 * kMiB, 28 * kMiB};
  s.traces = {trace};
  s.exporter.interval_seconds = 0.01;
  s.exporter.window_seconds = 30;
  return s;
}

TEST(Exposition, ParsesBackToTheSnapshotsNumbers) {
  ServingSample serving;
  serving.scrapes = 5;
  auto e = parse_exposition(render_exposition(two_devices(), serving));
  const std::map<std::string, std::string> h200 = {
      {"gpu", "0"},
      {"uuid", "GPU-bbbbbbbb-2222-4000-8000-000000000001"},
      {"name", "NVIDIA H200"},
      {"host", "node-7"}};
  EXPECT_EQ(e.value("gpumem_device_up", h200), 1);
  EXPECT_EQ(e.value("gpumem_memory_total_bytes", h200), 143771.0 * kMiB);
  EXPECT_EQ(e.value("gpumem_memory_used_bytes", h200), 3.0 * kMiB);
  EXPECT_EQ(e.value("gpumem_memory_free_bytes", h200), (143229.0 - 3) * kMiB);
  EXPECT_EQ(e.value("gpumem_memory_reserved_bytes", h200), 542.0 * kMiB);
  EXPECT_EQ(e.value("gpumem_memory_used_peak_window_bytes", h200), 515.0 * kMiB);
  EXPECT_EQ(e.value("gpumem_process_memory_used_bytes", {{"pid", "4242"}, {"process", "python3"}}),
            3.0 * kMiB);
  EXPECT_EQ(e.types.at("gpumem_memory_used_bytes"), "gauge");
  EXPECT_EQ(e.types.at("gpumem_exporter_scrapes_total"), "counter");
  EXPECT_EQ(e.value("gpumem_exporter_scrapes_total"), 5);
  EXPECT_EQ(e.value("gpumem_exporter_sampling_interval_seconds"), 0.01);
}

TEST(Exposition, LostDeviceIsDownWithoutStaleGauges) {
  auto e = parse_exposition(render_exposition(two_devices()));
  EXPECT_EQ(e.value("gpumem_device_up", {{"gpu", "1"}}), 0);
  EXPECT_EQ(e.find("gpumem_device_up", {{"gpu", "1"}}).front().labels.at("name"),
            "NVIDIA A100 \"40GB\"\\x");
  for (const char* name : {"gpumem_memory_total_bytes", "gpumem_memory_used_bytes",
                           "gpumem_memory_used_peak_window_bytes"}) {
    EXPECT_TRUE(e.find(name, {{"gpu", "1"}}).empty()) << name;
  }
}

TEST(Exposition, TracesAreLabelledByScope) {
  auto e = parse_exposition(render_exposition(two_devices()));
  const std::map<std::string, std::string> scope = {
      {"scope", "train step\nline 2"}, {"pid", "4242"}, {"source", "sampled"}, {"device", "0"}};
  EXPECT_EQ(e.value("gpumem_trace_delta_used_bytes", scope), 2.0 * kMiB);
  EXPECT_EQ(e.value("gpumem_trace_delta_peaked_bytes", scope), 28.0 * kMiB);
  EXPECT_EQ(e.value("gpumem_trace_peak_bytes", scope), 40.0 * kMiB);
  EXPECT_DOUBLE_EQ(e.value("gpumem_trace_published_timestamp_seconds", {{"pid", "4242"}}),
                   1'700'000'000.123);
}

// Issue 24, findings 3 and 7: pid 1 of two containers is two series (the pid_namespace label,
// left out for the exporter's own namespace); two records of one series are one sample, the
// newest.
TEST(Exposition, OneSamplePerSeriesAndContainersApart) {
  Snapshot s = two_devices();
  s.pid_namespace = "pid:[4026531836]";
  detail::PublishedTrace base = s.traces[0];
  base.scope = "step";
  base.pid = 1;
  s.traces.clear();
  const std::pair<const char*, std::int64_t> records[] = {
      {"pid:[4026531836]", 1}, {"pid:[4026532001]", 2}, {"pid:[4026532002]", 3}};
  for (const auto& [ns, peak] : records) {
    detail::PublishedTrace t = base;
    t.pid_namespace = ns;
    t.bytes.peak = peak * static_cast<std::int64_t>(kMiB);
    t.file = "b.trace";
    s.traces.push_back(t);
    t.unix_ms -= 1000;  // an older record of the same series, on another device
    t.bytes.device = 1;
    t.bytes.peak = 99;
    t.file = "a.trace";
    s.traces.push_back(t);
  }
  EXPECT_EQ(keep_newest_per_series(s.traces, s.pid_namespace), 3u);
  ASSERT_EQ(s.traces.size(), 3u);
  auto e = parse_exposition(render_exposition(s));
  const auto peaks = e.find("gpumem_trace_peak_bytes", {{"scope", "step"}, {"pid", "1"}});
  ASSERT_EQ(peaks.size(), 3u);
  std::map<std::string, double> by_namespace;
  for (const auto& sample : peaks) {
    const auto label = sample.labels.find("pid_namespace");
    by_namespace[label == sample.labels.end() ? "" : label->second] = sample.value;
  }
  const std::map<std::string, double> expected = {
      {"", 1.0 * kMiB}, {"pid:[4026532001]", 2.0 * kMiB}, {"pid:[4026532002]", 3.0 * kMiB}};
  EXPECT_EQ(by_namespace, expected);
  EXPECT_EQ(e.find("gpumem_trace_published_timestamp_seconds", {{"scope", "step"}}).size(), 3u);
  // A tie in time goes to the first file name, whatever the order the records came in.
  std::vector<detail::PublishedTrace> tie = {base, base};
  tie[0].file = "z.trace";
  tie[0].bytes.peak = 7;
  tie[1].file = "m.trace";
  tie[1].bytes.peak = 8;
  EXPECT_EQ(keep_newest_per_series(tie, ""), 1u);
  EXPECT_EQ(tie.at(0).bytes.peak, 8);
}

TEST(Exposition, EmptySnapshotIsStillValid) {
  auto e = parse_exposition(render_exposition(Snapshot{}));
  EXPECT_TRUE(e.find("gpumem_device_up").empty());
  EXPECT_EQ(e.types.at("gpumem_device_up"), "gauge");
}

TEST(Exposition, EscapesLabelValues) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(Utf8, KeepsValidTextAndReplacesEveryInvalidByte) {
  const std::string kFffd = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("python3 \xE2\x82\xAC \xF0\x9D\x84\x9E"),
            "python3 \xE2\x82\xAC \xF0\x9D\x84\x9E");
  EXPECT_EQ(valid_utf8("train\xE2\x82"), "train" + kFffd + kFffd);  // cut mid-character
  EXPECT_EQ(valid_utf8("\xFF\xFE"), kFffd + kFffd);
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kFffd + kFffd);                          // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // a surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(valid_utf8("\x80"
                       "a"),
            kFffd + "a");  // a stray continuation
  EXPECT_EQ(valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Exposition, LabelValuesAreValidUtf8) {
  Snapshot s = two_devices();
  s.processes[0].process = "pyth\xE2\x82";  // a command name the kernel cut mid-character
  auto e = parse_exposition(render_exposition(s));
  EXPECT_EQ(e.find("gpumem_process_memory_used_bytes").at(0).labels.at("process"),
            "pyth\xEF\xBF\xBD\xEF\xBF\xBD");
}

// Every byte in every name an outsider controls: Prometheus' own checker accepts the result.
TEST(Exposition, PromtoolAcceptsAnyBytesInNames) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool (Debian's prometheus package) is not installed";
  }
  Snapshot s = two_devices();
  std::mt19937 random(12);
  auto hostile = [&](std::size_t length) {
    std::string text;
    for (std::size_t i = 0; i < length; ++i) text += static_cast<char>(random() % 256);
    return text;
  };
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte += static_cast<char>(c);
  s.devices[0].name = every_byte;
  s.devices[1].uuid = hostile(40);
  s.host = "node\xC3";
  for (int i = 0; i < 32; ++i) {
    s.processes.push_back({0, hostile(8), static_cast<unsigned>(100 + i), hostile(15), 1});
    s.processes.back().container.pod = hostile(10);
    detail::PublishedTrace trace = s.traces[0];
    trace.scope = hostile(64);
    trace.uuid = hostile(20);
    trace.pid = static_cast<unsigned>(100 + i);
    s.traces.push_back(trace);
  }
  const auto file = std::filesystem::temp_directory_path() /
                    ("gpumem-promtool-" + std::to_string(::getpid()) + ".prom");
  std::ofstream(file, std::ios::binary) << render_exposition(s);
  const std::string command = "promtool check metrics < " + file.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char chunk[512];
  while (std::size_t got = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, got);
  const int status = ::pclose(pipe);
  std::filesystem::remove(file);
  EXPECT_EQ(status, 0) << output;
}

}  // namespace
}  // namespace gpumem::serve
