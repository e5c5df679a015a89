// Reading attribution documents: what the schema says is read back; bad, truncated and foreign
// files, and indices out of range, are errors naming the file and the field, never crashes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "attribution/document.hpp"
#include "attribution/views.hpp"
#include "cli/attribution_documents.hpp"
#include "cli/command_runner.hpp"
#include "support/json_mutations.hpp"

namespace gpumem::testing {
namespace {

namespace attr = gpumem::cli::attribution;

std::string error_of(const std::string& text) {
  std::string error;
  EXPECT_FALSE(attr::parse_document(text, "snap.json", &error).has_value()) << text;
  return error;
}

std::string error_of(DocumentBuilder& doc) {
  return error_of(doc.text());
}

TEST(AttributionReader, ReadsEveryFieldOfTheKnownDocument) {
  std::string error;
  const auto document = attr::parse_document(known_document().text(), "snap.json", &error);
  ASSERT_TRUE(document) << error;
  EXPECT_EQ(document->command, "python train.py");
  EXPECT_EQ(document->host, "node-1");
  ASSERT_EQ(document->devices.size(), 1u);
  EXPECT_EQ(document->devices[0].name, "NVIDIA H200");
  EXPECT_EQ(document->devices[0].total_bytes, 150754820096ll);
  ASSERT_EQ(document->frames.size(), 4u);
  EXPECT_EQ(document->frames[1].function, "train_step");
  EXPECT_EQ(document->frames[1].line, 42);
  ASSERT_EQ(document->stacks.size(), 3u);
  EXPECT_EQ(document->stacks[2], (std::vector<std::size_t>{3, 2, 0}));
  ASSERT_EQ(document->snapshots.size(), 2u);
  const attr::Snapshot& peak = document->snapshots[0];
  EXPECT_EQ(peak.what, "peak");
  EXPECT_EQ(peak.scope, "run");
  EXPECT_EQ(peak.level_bytes, 200 * kMiB);
  EXPECT_EQ(peak.live_bytes, 180 * kMiB);
  EXPECT_EQ(peak.held_without_block(), 20 * kMiB);
  ASSERT_EQ(peak.blocks.size(), 5u);
  EXPECT_EQ(peak.blocks[3].kind, "pool");
  EXPECT_EQ(peak.blocks[3].stack, 2u);
  EXPECT_FALSE(peak.blocks[4].stack);
  const attr::Snapshot& oom = document->snapshots[1];
  ASSERT_TRUE(oom.failure);
  EXPECT_EQ(oom.failure->bytes, 16ll << 30);
  EXPECT_EQ(oom.failure->error, "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_EQ(oom.other_processes.size(), 1u);
  EXPECT_EQ(oom.other_processes[0].used_bytes, 130ll << 30);
  ASSERT_EQ(document->timeline.size(), 1u);
  EXPECT_EQ(document->timeline[0].steps[3], (std::pair<double, std::int64_t>{1.25, 200 * kMiB}));
  EXPECT_TRUE(document->warnings.empty());
}

TEST(AttributionReader, WrittenBackItReadsTheSame) {
  std::string error;
  const auto document = attr::parse_document(known_document().text(), "a.json", &error);
  ASSERT_TRUE(document) << error;
  const auto again = attr::parse_document(attr::document_json(*document).dump(), "b.json", &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(attr::document_json(*again), attr::document_json(*document));
}

TEST(AttributionReader, BadFilesNameTheFileAndWhatIsWrong) {
  const std::string text = known_document().text();
  EXPECT_EQ(error_of(""), "snap.json: empty (still being written, or cut short?)");
  EXPECT_NE(
      error_of(text.substr(0, text.size() / 2)).find("snap.json: not valid JSON: it ends early"),
      std::string::npos);
  EXPECT_NE(error_of("{\"schema\": trux, \"a\": 1}").find("snap.json: not valid JSON at byte"),
            std::string::npos);
  EXPECT_EQ(error_of("[1, 2]"), "snap.json: not a gpumem attribution document (not a JSON object)");
  EXPECT_NE(error_of("{\"schema\": \"gpumem.run/1\"}")
                .find("schema \"gpumem.run/1\" is not an attribution document"),
            std::string::npos);
  EXPECT_NE(error_of("{\"schema\": \"gpumem.attribution/2\"}")
                .find("a version this gpumem does not read"),
            std::string::npos);
  EXPECT_NE(error_of("{}").find("no \"schema\""), std::string::npos);
}

TEST(AttributionReader, WhitespaceIsFoldedAndALongStringRefusedWhereTheCapIsPassed) {
  const std::string text = known_document().text();
  // 4 MiB of whitespace between two fields: the same document, the position of an error after
  // it that of the raw file.
  std::string spaced = text;
  const std::size_t at = spaced.find("\"frames\"");
  spaced.insert(at, std::string(4 << 20, '\n'));
  std::string error;
  const auto document = attr::parse_document(spaced, "snap.json", &error);
  ASSERT_TRUE(document) << error;
  EXPECT_EQ(attr::document_json(*document),
            attr::document_json(*attr::parse_document(text, "snap.json", &error)));
  // A function name over the 1 MiB cap on one string, refused at the byte that passed it.
  const std::size_t function = text.find("\"function\": \"") + 13;
  std::string named = text;
  named.insert(function, std::string(2 << 20, 'f'));
  EXPECT_EQ(error_of(named),
            "snap.json: frames[0].function: a string or number over 1 MiB (at byte " +
                std::to_string(function + (1 << 20) + 1) + ")");
}

TEST(AttributionReader, FieldsOfTheWrongTypeOrMissingAreNamed) {
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][1].erase("level_bytes");
    EXPECT_EQ(error_of(doc), "snap.json: snapshots[1].level_bytes: missing");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][0]["blocks"][2]["bytes"] = -5;
    EXPECT_NE(error_of(doc).find("snapshots[0].blocks[2].bytes: expected an integer from 0"),
              std::string::npos);
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][0]["blocks"][2]["bytes"] = 18446744073709551615ull;
    EXPECT_NE(error_of(doc).find("snapshots[0].blocks[2].bytes: expected an integer"),
              std::string::npos);
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][0]["what"] = "peek";
    EXPECT_EQ(error_of(doc),
              "snap.json: snapshots[0].what: expected one of peak, oom, found \"peek\"");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["frames"][2]["function"] = 12;
    EXPECT_EQ(error_of(doc), "snap.json: frames[2].function: expected a string, found 12");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][0]["blocks"][0] = "a block";
    EXPECT_EQ(error_of(doc),
              "snap.json: snapshots[0].blocks[0]: expected an object, found \"a block\"");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][0]["live_bytes"] = 1;
    EXPECT_NE(error_of(doc).find("snapshots[0].live_bytes: 1 is not the sum of blocks[].bytes"),
              std::string::npos);
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["timeline"][0]["steps"][3][0] = 0.1;
    EXPECT_NE(error_of(doc).find("timeline[0].steps[3]: time 0.1 is before the step ahead of it"),
              std::string::npos);
  }
}

TEST(AttributionReader, ReadsWhenAndByWhomTheOtherProcessesWereListed) {
  DocumentBuilder doc = known_document();
  doc.json()["snapshots"][1]["monotonic_ns"] = 88213456789012ll;
  doc.json()["snapshots"][1]["other_processes_age_s"] = 0.012;
  doc.json()["snapshots"][1]["other_processes"][0]["in_run"] = true;
  doc.json()["snapshots"][1]["other_processes"][0]["rank"] = 3;
  std::string error;
  const auto document = attr::parse_document(doc.text(), "a.json", &error);
  ASSERT_TRUE(document) << error;
  const attr::Snapshot& oom = document->snapshots[1];
  EXPECT_EQ(oom.monotonic_ns, 88213456789012ll);
  EXPECT_EQ(oom.other_processes_age_s, 0.012);
  EXPECT_EQ(oom.other_processes[0].in_run, true);
  EXPECT_EQ(oom.other_processes[0].rank, 3);
  // Absent or null: not known (a library document, an older writer).
  EXPECT_FALSE(document->snapshots[0].monotonic_ns);
  EXPECT_FALSE(document->snapshots[0].other_processes_age_s);
  // Written back, they read the same.
  const auto again = attr::parse_document(attr::document_json(*document).dump(), "b.json", &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->snapshots[1].other_processes_age_s, 0.012);
  EXPECT_EQ(again->snapshots[1].other_processes[0].rank, 3);
  EXPECT_EQ(again->snapshots[1].monotonic_ns, 88213456789012ll);
  {
    DocumentBuilder bad = known_document();
    bad.json()["snapshots"][1]["other_processes"][0]["in_run"] = "yes";
    EXPECT_EQ(error_of(bad),
              "snap.json: snapshots[1].other_processes[0].in_run: expected true or false, found "
              "\"yes\"");
  }
  {
    DocumentBuilder bad = known_document();
    bad.json()["snapshots"][1]["other_processes_age_s"] = "soon";
    EXPECT_EQ(error_of(bad),
              "snap.json: snapshots[1].other_processes_age_s: expected seconds, found \"soon\"");
  }
}

TEST(AttributionReader, IndicesOutOfRangeAreErrors) {
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][0]["blocks"][1]["stack"] = 9;
    EXPECT_EQ(error_of(doc),
              "snap.json: snapshots[0].blocks[1].stack: 9 is out of range (3 stacks)");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["snapshots"][1]["failure"]["stack"] = 3;
    EXPECT_EQ(error_of(doc), "snap.json: snapshots[1].failure.stack: 3 is out of range (3 stacks)");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["stacks"][1][1] = 4;
    EXPECT_EQ(error_of(doc), "snap.json: stacks[1][1]: 4 is not an index into frames (4 frames)");
  }
  {
    DocumentBuilder doc = known_document();
    doc.json()["stacks"][0][0] = -1;
    EXPECT_NE(error_of(doc).find("stacks[0][0]: -1 is not an index"), std::string::npos);
  }
}

// The document's lists in another order: as gpumem writes them (frames, stacks, snapshots: each
// index checked as it is read), and backwards (each checked once the list it points into is
// read); the schema last, after the lists.
std::string in_order(const DocumentBuilder& doc, bool backwards) {
  std::vector<std::string> keys = {"schema", "command", "host",      "devices",
                                   "frames", "stacks",  "snapshots", "timeline"};
  if (backwards) std::reverse(keys.begin(), keys.end());
  nlohmann::ordered_json ordered = nlohmann::ordered_json::object();
  const nlohmann::json& json = const_cast<DocumentBuilder&>(doc).json();
  for (const std::string& key : keys) {
    if (json.contains(key)) ordered[key] = nlohmann::ordered_json::parse(json[key].dump());
  }
  return ordered.dump(1);
}

TEST(AttributionReader, ListsInAnyOrderReadTheSameAndFailTheSame) {
  std::string error;
  const auto sorted = attr::parse_document(known_document().text(), "snap.json", &error);
  ASSERT_TRUE(sorted) << error;
  for (bool backwards : {false, true}) {
    const auto read =
        attr::parse_document(in_order(known_document(), backwards), "snap.json", &error);
    ASSERT_TRUE(read) << error;
    EXPECT_EQ(attr::document_json(*read).dump(), attr::document_json(*sorted).dump());
  }
  std::vector<DocumentBuilder> bad(5, known_document());
  bad[0].json()["snapshots"][0]["blocks"][1]["stack"] = 9;
  bad[1].json()["snapshots"][1]["failure"]["stack"] = 3;
  bad[2].json()["stacks"][1][1] = 4;
  bad[3].json()["snapshots"][0]["blocks"][2]["bytes"] = "lots";
  bad[4].json()["timeline"] = {{{"device", 0}, {"steps", {{1.0, 5}, {0.5, 6}}}}};
  const std::string expected[] = {
      "snap.json: snapshots[0].blocks[1].stack: 9 is out of range (3 stacks)",
      "snap.json: snapshots[1].failure.stack: 3 is out of range (3 stacks)",
      "snap.json: stacks[1][1]: 4 is not an index into frames (4 frames)",
      "snap.json: snapshots[0].blocks[2].bytes: expected an integer from 0 to "
      "9223372036854775807, found \"lots\"",
      "snap.json: timeline[0].steps[1]: time 0.5 is before the step ahead of it"};
  for (std::size_t at = 0; at < bad.size(); ++at) {
    EXPECT_EQ(error_of(bad[at]), expected[at]);
    EXPECT_EQ(error_of(in_order(bad[at], false)), expected[at]);
    EXPECT_EQ(error_of(in_order(bad[at], true)), expected[at]);
  }
  // The schema decides first, wherever it is; a name twice is refused.
  DocumentBuilder foreign = known_document();
  foreign.json()["schema"] = "gpumem.run/1";
  foreign.json()["snapshots"][0]["blocks"][1]["stack"] = 9;
  EXPECT_NE(error_of(in_order(foreign, true)).find("is not an attribution document"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"schema": "gpumem.attribution/1", "frames": [], "frames": []})"),
            "snap.json: the document: \"frames\" appears twice");
}

TEST(AttributionReader, ALevelBelowItsBlocksIsKeptWithAWarning) {
  DocumentBuilder doc = known_document();
  doc.json()["snapshots"][0]["level_bytes"] = 100 * kMiB;
  std::string error;
  const auto document = attr::parse_document(doc.text(), "snap.json", &error);
  ASSERT_TRUE(document) << error;
  ASSERT_EQ(document->warnings.size(), 1u);
  EXPECT_NE(document->warnings[0].find("snapshots[0].level_bytes"), std::string::npos);
  EXPECT_EQ(document->snapshots[0].held_without_block(), 0);
}

TEST(AttributionReader, ChoosesTheHighestPeakTheFirstFailureOrAnIndex) {
  DocumentBuilder doc = known_document();
  doc.snapshot("peak", 300 * kMiB, 0, 2.0);
  doc.snapshot("oom", 10 * kMiB, 0, 3.0);
  doc.snapshot("peak", 300 * kMiB, 0, 4.0);
  std::string error;
  const auto document = attr::parse_document(doc.text(), "snap.json", &error);
  ASSERT_TRUE(document) << error;
  EXPECT_EQ(attr::choose_snapshot(*document, "peak", &error), 2u);
  EXPECT_EQ(attr::choose_snapshot(*document, "oom", &error), 1u);
  EXPECT_EQ(attr::choose_snapshot(*document, "4", &error), 4u);
  EXPECT_FALSE(attr::choose_snapshot(*document, "5", &error));
  EXPECT_EQ(error, "snap.json: --snapshot 5 is out of range (5 snapshots: 0 to 4)");
  EXPECT_FALSE(attr::choose_snapshot(*document, "99999999999999999999999", &error));
  EXPECT_FALSE(attr::choose_snapshot(*document, "-1", &error));
  EXPECT_EQ(error, "snap.json: --snapshot -1: expected peak, oom or a snapshot's index");
  DocumentBuilder empty;
  const auto none = attr::parse_document(empty.text(), "empty.json", &error);
  ASSERT_TRUE(none) << error;
  EXPECT_FALSE(attr::choose_snapshot(*none, "oom", &error));
  EXPECT_EQ(error, "empty.json: no out-of-memory snapshot (0 snapshots)");
}

TEST(AttributionReader, FilesThatAreNotDocuments) {
  std::string error;
  const std::string folder = temporary_folder();
  EXPECT_FALSE(attr::read_document(folder + "/missing.json", &error));
  EXPECT_EQ(error, folder + "/missing.json: No such file or directory");
  EXPECT_FALSE(attr::read_document(folder, &error));
  EXPECT_EQ(error, folder + ": is a folder, not an attribution document");
  const std::string path = known_document().write(folder);
  EXPECT_TRUE(attr::read_document(path, &error)) << error;
}

// Mutated documents (bytes changed, cut, duplicated, numbers replaced): each is read or refused
// with an error naming the file; whatever is read, every view renders. Run under ASan/UBSan
// (GPUMEM_SANITIZE=address,undefined) this is the reader's fuzz test.
TEST(AttributionReader, MutatedDocumentsAreReadOrRefusedNeverCrash) {
  const std::string original = known_document().text();
  std::mt19937 random(1234);
  std::size_t read = 0, refused = 0;
  for (int round = 0; round < 4000; ++round) {
    const std::string text = mutated_json(original, random);
    std::string error;
    const auto document = attr::parse_document(text, "m.json", &error);
    if (!document) {
      ++refused;
      EXPECT_EQ(error.rfind("m.json: ", 0), 0u) << error;
      continue;
    }
    ++read;
    const auto peak = attr::choose_snapshot(*document, "peak", nullptr);
    const auto oom = attr::choose_snapshot(*document, "oom", nullptr);
    for (const attr::Snapshot& snapshot : document->snapshots) {
      EXPECT_FALSE(attr::top_table(*document, snapshot, 3, {std::size_t{60}, {}}).empty());
      EXPECT_FALSE(attr::icicle_svg(*document, snapshot).empty());
      EXPECT_TRUE(attr::pprof_profile(*document, snapshot, &error)) << error;
    }
    EXPECT_FALSE(attr::html_report(*document, peak, oom).empty());
  }
  EXPECT_GT(read, 100u);
  EXPECT_GT(refused, 1000u);
}

}  // namespace
}  // namespace gpumem::testing
