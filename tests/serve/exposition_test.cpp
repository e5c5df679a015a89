#include "serve/exposition_parser.hpp"

#include <gtest/gtest.h>

#include "exposition.hpp"

namespace gpumem::serve {
namespace {

using gpumem::testing::parse_exposition;
constexpr std::int64_t MiB = 1 << 20;

Snapshot two_devices() {
  Snapshot s;
  s.host = "node-7";
  DeviceSample up;
  up.gpu = 0;
  up.uuid = "GPU-bbbbbbbb-2222-4000-8000-000000000001";
  up.name = "NVIDIA H200";
  up.up = true;
  up.memory = {143771ull * MiB, 143229ull * MiB - 3 * MiB, 3ull * MiB, 542ull * MiB};
  up.window_peak = 515 * MiB;
  DeviceSample lost;
  lost.gpu = 1;
  lost.uuid = "GPU-aaaaaaaa-1111-4000-8000-000000000000";
  lost.name = "NVIDIA A100 \"40GB\"\\x";
  lost.up = false;
  lost.memory = {1, 2, 3, 4};  // stale: must not be shown
  lost.window_peak = 99;
  s.devices = {up, lost};
  s.processes = {{0, up.uuid, 4242, "python3", 3 * MiB}};
  PublishedTrace trace;
  trace.scope = "train step\nline 2";
  trace.pid = 4242;
  trace.uuid = up.uuid;
  trace.unix_ms = 1'700'000'000'123;
  trace.bytes = {Source::sampled, 0, 10 * MiB, 12 * MiB, 40 * MiB, 2 * MiB, 28 * MiB};
  s.traces = {trace};
  s.exporter.interval_seconds = 0.01;
  s.exporter.window_seconds = 30;
  s.exporter.scrapes = 5;
  return s;
}

TEST(Exposition, ParsesBackToTheSnapshotsNumbers) {
  auto e = parse_exposition(render_exposition(two_devices()));
  const std::map<std::string, std::string> h200 = {
      {"gpu", "0"},
      {"uuid", "GPU-bbbbbbbb-2222-4000-8000-000000000001"},
      {"name", "NVIDIA H200"},
      {"host", "node-7"}};
  EXPECT_EQ(e.value("gpumem_device_up", h200), 1);
  EXPECT_EQ(e.value("gpumem_memory_total_bytes", h200), 143771.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_used_bytes", h200), 3.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_free_bytes", h200), (143229.0 - 3) * MiB);
  EXPECT_EQ(e.value("gpumem_memory_reserved_bytes", h200), 542.0 * MiB);
  EXPECT_EQ(e.value("gpumem_memory_used_peak_window_bytes", h200), 515.0 * MiB);
  EXPECT_EQ(e.value("gpumem_process_memory_used_bytes", {{"pid", "4242"}, {"process", "python3"}}),
            3.0 * MiB);
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
  EXPECT_EQ(e.value("gpumem_trace_delta_used_bytes", scope), 2.0 * MiB);
  EXPECT_EQ(e.value("gpumem_trace_delta_peaked_bytes", scope), 28.0 * MiB);
  EXPECT_EQ(e.value("gpumem_trace_peak_bytes", scope), 40.0 * MiB);
  EXPECT_DOUBLE_EQ(e.value("gpumem_trace_published_timestamp_seconds", {{"pid", "4242"}}),
                   1'700'000'000.123);
}

TEST(Exposition, EmptySnapshotIsStillValid) {
  auto e = parse_exposition(render_exposition(Snapshot{}));
  EXPECT_TRUE(e.find("gpumem_device_up").empty());
  EXPECT_EQ(e.types.at("gpumem_device_up"), "gauge");
}

TEST(Exposition, EscapesLabelValues) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace gpumem::serve
