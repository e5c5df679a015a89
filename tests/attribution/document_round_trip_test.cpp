// The library writes gpumem.attribution/1 and reads it back through the same model
// (gpumem/internal/attribution_document.hpp): every field of a snapshot survives the round trip,
// and what the reader refuses, it names.
#include <gtest/gtest.h>

#include <string>

#include "gpumem/attribution.hpp"
#include "gpumem/internal/attribution_document.hpp"

namespace gpumem {
namespace {

namespace doc = gpumem::detail::attribution;

AttributionSnapshot two_stacks_and_a_failure() {
  AttributionSnapshot snapshot;
  snapshot.what = "oom";
  snapshot.scope = "train";
  snapshot.pid = 4242;
  snapshot.device = 1;
  snapshot.time_s = 1.25;
  snapshot.monotonic_ns = 88213456789012;
  snapshot.level_bytes = 300;
  snapshot.live_bytes = 250;
  snapshot.frames = {{"load", "model.cpp", 43, "/opt/app", 0x401a2b, false},
                     {"main", std::nullopt, std::nullopt, "/opt/app", 0x401000, false},
                     {"forward", "model.py", 17, std::nullopt, std::nullopt, true}};
  snapshot.stacks = {{0, 1}, {2, 1}};
  snapshot.blocks = {{0x7f0000000000, 200, BlockKind::device, 0.5, 0, 4242},
                     {0x7f0000100000, 50, BlockKind::pool, 0.25, 1, 4242}};
  snapshot.failure =
      AllocationFailure{1ull << 40, BlockKind::device, 1, "CUDA_ERROR_OUT_OF_MEMORY", 1000, 2000};
  snapshot.other_processes = {{77, "python3", 123}};
  snapshot.other_processes_age_s = 0.002;
  snapshot.device_identity = {1, "GPU-bbbbbbbb-2222-4000-8000-000000000001", "NVIDIA H200", 4000};
  return snapshot;
}

TEST(AttributionDocument, WhatTheLibraryWritesItReadsBackWhole) {
  const AttributionSnapshot written = two_stacks_and_a_failure();
  std::string error;
  const std::optional<doc::Document> read =
      doc::parse_document(written.to_json(), "written.json", &error);
  ASSERT_TRUE(read.has_value()) << error;
  EXPECT_TRUE(read->warnings.empty());
  ASSERT_EQ(read->devices.size(), 1u);
  EXPECT_EQ(read->devices[0].ordinal, 1);
  EXPECT_EQ(read->devices[0].uuid, "GPU-bbbbbbbb-2222-4000-8000-000000000001");
  EXPECT_EQ(read->devices[0].name, "NVIDIA H200");
  EXPECT_EQ(read->devices[0].total_bytes, 4000);
  ASSERT_EQ(read->frames.size(), 3u);
  EXPECT_EQ(read->frames[0].function, "load");
  EXPECT_EQ(read->frames[0].line, 43);
  EXPECT_EQ(read->frames[0].address, "0x401a2b");
  EXPECT_EQ(read->frames[1].file, std::nullopt);
  EXPECT_EQ(read->frames[2].language, "python");
  EXPECT_EQ(read->stacks, (std::vector<std::vector<std::size_t>>{{0, 1}, {2, 1}}));
  ASSERT_EQ(read->snapshots.size(), 1u);
  const doc::Snapshot& snapshot = read->snapshots[0];
  EXPECT_EQ(snapshot.what, "oom");
  EXPECT_EQ(snapshot.scope, "train");
  EXPECT_EQ(snapshot.pid, 4242);
  EXPECT_EQ(snapshot.device, 1);
  EXPECT_DOUBLE_EQ(snapshot.time_s, 1.25);
  EXPECT_EQ(snapshot.monotonic_ns, 88213456789012);
  EXPECT_EQ(snapshot.level_bytes, 300);
  EXPECT_EQ(snapshot.live_bytes, 250);
  EXPECT_EQ(snapshot.context_bytes, std::nullopt);  // the library does not tell it apart
  EXPECT_EQ(snapshot.held_without_block(), 50);
  EXPECT_EQ(snapshot.attributed, true);
  ASSERT_EQ(snapshot.blocks.size(), 2u);
  EXPECT_EQ(snapshot.blocks[0].address, "0x7f0000000000");
  EXPECT_EQ(snapshot.blocks[0].bytes, 200);
  EXPECT_EQ(snapshot.blocks[1].kind, "pool");
  EXPECT_EQ(snapshot.blocks[1].stack, 1u);
  ASSERT_TRUE(snapshot.failure.has_value());
  EXPECT_EQ(snapshot.failure->bytes, std::int64_t{1} << 40);
  EXPECT_EQ(snapshot.failure->error, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(snapshot.failure->stack, 1u);
  ASSERT_EQ(snapshot.other_processes.size(), 1u);
  EXPECT_EQ(snapshot.other_processes[0].name, "python3");
  EXPECT_EQ(snapshot.other_processes[0].used_bytes, 123);
  EXPECT_EQ(snapshot.other_processes_age_s, 0.002);

  // Written again from the model, it reads the same (the one writer).
  const std::optional<doc::Document> again =
      doc::parse_document(doc::document_text(*read), "again.json", &error);
  ASSERT_TRUE(again.has_value()) << error;
  EXPECT_EQ(doc::document_json(*again), doc::document_json(*read));
}

// Two snapshots sharing frames and stacks: each distinct one is written once.
TEST(AttributionDocument, SnapshotsShareTheirFramesAndStacks) {
  const AttributionSnapshot first = two_stacks_and_a_failure();
  AttributionSnapshot second = first;
  second.what = "peak";
  second.failure.reset();
  std::string error;
  const auto read = doc::parse_document(attribution_json({first, second}), "two.json", &error);
  ASSERT_TRUE(read.has_value()) << error;
  EXPECT_EQ(read->frames.size(), 3u);
  EXPECT_EQ(read->stacks.size(), 2u);
  ASSERT_EQ(read->snapshots.size(), 2u);
  EXPECT_EQ(read->snapshots[1].blocks[1].stack, 1u);
}

TEST(AttributionDocument, AnIndexOutOfRangeIsNamed) {
  AttributionSnapshot snapshot = two_stacks_and_a_failure();
  std::string text = snapshot.to_json();
  const std::string stacks = "\"stacks\": [\n  [\n   0,\n   1\n  ]";
  const std::size_t at = text.find(stacks);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, stacks.size(), "\"stacks\": [\n  [\n   0,\n   9\n  ]");
  std::string error;
  EXPECT_FALSE(doc::parse_document(text, "bad.json", &error).has_value());
  EXPECT_NE(error.find("bad.json: stacks[0][1]"), std::string::npos) << error;
}

}  // namespace
}  // namespace gpumem
