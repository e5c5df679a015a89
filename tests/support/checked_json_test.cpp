// The one checked-JSON reader (gpumem/internal/checked_json.hpp): memory bounded by what a format
// keeps (whitespace runs folded, tokens capped as soon as the cap is passed, values not kept
// dropped, streamed lists handed over element by element), every error one line with the field's
// path in the document, positions those of the raw input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::json {
namespace {

struct Seen {
  std::vector<std::string> elements;  // "list[index]=value"
  std::vector<std::string> restarts;
};

Shape test_shape(Seen& seen) {
  Shape shape;
  shape.what = "a test document";
  shape.check_schema = [](const Json& schema) -> std::string {
    if (!schema.is_string()) return "no schema";
    return schema == "test/1" ? "" : "schema " + shown(schema) + " is not test/1";
  };
  static const Kept kept{"name", "items", "items[]", "items[].size", "tags"};
  shape.kept = &kept;
  shape.streamed = {"items"};
  shape.element = [&seen](const std::string& /*list*/, const std::string& where,
                          const Json& element) {
    const Object object(element, where + ".");
    seen.elements.push_back(where + "=" + std::to_string(object.byte_count("size")));
  };
  shape.restart = [&seen](const std::string& list) { seen.restarts.push_back(list); };
  return shape;
}

std::string error_of(const std::string& text, Caps caps = {}) {
  Seen seen;
  std::string error;
  EXPECT_FALSE(read_text(text, "doc.json", test_shape(seen), caps, &error)) << text;
  return error;
}

TEST(CheckedJson, KeepsOnlyWhatTheFormatKeepsAndStreamsItsLists) {
  Seen seen;
  std::string error;
  const std::optional<Json> root = read_text(
      R"({"schema":"test/1","name":"n","other":{"big":[1,2,3]},"items":[{"size":7,"junk":"x"},)"
      R"({"size":9}],"tags":{"a":[1]}})",
      "doc.json", test_shape(seen), {}, &error);
  ASSERT_TRUE(root) << error;
  EXPECT_EQ(root->dump(), R"({"items":[],"name":"n","schema":"test/1","tags":{"a":[1]}})");
  EXPECT_EQ(seen.elements, (std::vector<std::string>{"items[0]=7", "items[1]=9"}));
  EXPECT_EQ(seen.restarts, (std::vector<std::string>{"items"}));
}

TEST(CheckedJson, AListNamedTwiceIsReadAgainFromItsStart) {
  Seen seen;
  std::string error;
  ASSERT_TRUE(read_text(R"({"schema":"test/1","items":[{"size":1}],"items":[{"size":2}]})",
                        "doc.json", test_shape(seen), {}, &error))
      << error;
  EXPECT_EQ(seen.restarts, (std::vector<std::string>{"items", "items"}));
  EXPECT_EQ(seen.elements.back(), "items[0]=2");
}

// A format that keeps everything (no Kept) and streams lists inside the elements of a streamed
// list, as the attribution document does with each snapshot's blocks.
Shape whole_shape(Seen& seen) {
  Shape shape;
  shape.what = "a test document";
  shape.check_schema = [](const Json& schema) -> std::string {
    return schema == "test/1" ? "" : "no schema";
  };
  shape.streamed = {"items", "items[].parts"};
  shape.element = [&seen](const std::string& list, const std::string& where, const Json& element) {
    seen.elements.push_back(list + " " + where + "=" + element.dump());
  };
  shape.restart = [&seen](const std::string& list) { seen.restarts.push_back(list); };
  shape.field_done = [&seen](const std::string& name) { seen.restarts.push_back("done " + name); };
  shape.root_fields_once = true;
  return shape;
}

TEST(CheckedJson, ListsInsideAStreamedElementAreStreamedAndEverythingElseKeptWhole) {
  Seen seen;
  std::string error;
  const std::optional<Json> root =
      read_text(R"({"schema":"test/1","other":{"x":[1,{"parts":[9]}]},)"
                R"("items":[{"n":1,"parts":[{"p":2},3],"more":[4]},{"parts":[]}]})",
                "doc.json", whole_shape(seen), {}, &error);
  ASSERT_TRUE(root) << error;
  // Kept whole: a list named "parts" that is not in an element of "items" is not streamed.
  EXPECT_EQ(root->dump(), R"({"items":[],"other":{"x":[1,{"parts":[9]}]},"schema":"test/1"})");
  EXPECT_EQ(seen.elements, (std::vector<std::string>{
                               R"(items[].parts items[0].parts[0]={"p":2})",
                               R"(items[].parts items[0].parts[1]=3)",
                               R"(items items[0]={"more":[4],"n":1,"parts":[]})",
                               R"(items items[1]={"parts":[]})",
                           }));
  EXPECT_EQ(seen.restarts, (std::vector<std::string>{"done other", "items", "items[].parts",
                                                     "items[].parts", "done items"}));
}

TEST(CheckedJson, ARootFieldNamedTwiceIsAnErrorWhereTheFormatSaysSo) {
  Seen seen;
  std::string error;
  EXPECT_FALSE(read_text(R"({"schema":"test/1","items":[],"items":[]})", "doc.json",
                         whole_shape(seen), {}, &error));
  EXPECT_EQ(error, "doc.json: the document: \"items\" appears twice");
  // Held until the schema is known, as any field error.
  EXPECT_FALSE(
      read_text(R"({"a":1,"a":2,"schema":"other"})", "doc.json", whole_shape(seen), {}, &error));
  EXPECT_EQ(error, "doc.json: no schema");
}

TEST(CheckedJson, AnErrorInsideANestedStreamedListNamesItsPath) {
  Seen seen;
  Shape shape = whole_shape(seen);
  shape.element = [](const std::string& /*list*/, const std::string& where, const Json& element) {
    if (element.is_number()) Object(element, where + ".");
  };
  std::string error;
  EXPECT_FALSE(read_text(R"({"schema":"test/1","items":[{"parts":[]},{"parts":[{},7]}]})",
                         "doc.json", shape, {}, &error));
  EXPECT_EQ(error, "doc.json: items[1].parts[1]: expected an object, found 7");
  const Caps caps{1 << 20, 8};
  EXPECT_FALSE(read_text(R"({"schema":"test/1","items":[{"parts":[{},"abcdefghijkl"]}]})",
                         "doc.json", shape, caps, &error));
  EXPECT_EQ(error, "doc.json: items[0].parts[1]: a string or number over 8 bytes (at byte 51)");
}

TEST(CheckedJson, FieldErrorsNameTheirPath) {
  EXPECT_EQ(error_of(R"({"schema":"test/1","items":[{"size":1},{"size":-4}]})"),
            "doc.json: items[1].size: expected a number of bytes, found -4");
  EXPECT_EQ(error_of(R"({"schema":"test/1","items":[3]})"),
            "doc.json: items[0]: expected an object, found 3");
}

TEST(CheckedJson, TheSchemaErrorComesBeforeAFieldErrorReadBeforeIt) {
  EXPECT_EQ(error_of(R"({"items":[{"size":-1}],"schema":"other/2"})"),
            "doc.json: schema \"other/2\" is not test/1");
  EXPECT_EQ(error_of(R"({"items":[{"size":-1}]})"), "doc.json: no schema");
  EXPECT_EQ(error_of(R"({"items":[{"size":-1}],"schema":"test/1"})"),
            "doc.json: items[0].size: expected a number of bytes, found -1");
}

TEST(CheckedJson, SyntaxErrorsGiveTheRawPositionThoughWhitespaceRunsAreFolded) {
  const std::string spaces(1000, ' ');
  // The bad character is byte 1 + 1000 + 1 of the input.
  EXPECT_EQ(error_of("{" + spaces + "]}"), "doc.json: not valid JSON at byte 1002");
  EXPECT_EQ(error_of("{\"schema\":" + spaces),
            "doc.json: not valid JSON: it ends early at byte 1011 (cut short?)");
  EXPECT_EQ(error_of(""), "doc.json: empty (still being written, or cut short?)");
  EXPECT_EQ(error_of("[1]"), "doc.json: not a test document (not a JSON object)");
  EXPECT_NE(error_of(R"({"schema":"test/1","name":1e999})").find("doc.json: not valid JSON: "),
            std::string::npos);
}

TEST(CheckedJson, WhitespaceRunsAreFoldedBeforeTheParserSeesThem) {
  std::string text = "{\"schema\":\"test/1\",";
  text += std::string(1 << 20, '\n');
  text += "\"name\":\"a  b\"}";
  BoundedSource source(std::string_view(text), 64);
  std::string fed;
  for (int c = source.next(); c >= 0; c = source.next()) fed += static_cast<char>(c);
  EXPECT_EQ(fed, "{\"schema\":\"test/1\",\n\"name\":\"a  b\"}");  // spaces in a string kept
  EXPECT_FALSE(source.overflowed());
}

TEST(CheckedJson, ATokenOverItsCapIsRefusedAsSoonAsTheCapIsPassed) {
  const Caps caps{1 << 20, 16};
  const std::string long_name(40, 'x');
  EXPECT_EQ(error_of(R"({"schema":"test/1","name":")" + long_name + R"("})", caps),
            "doc.json: name: a string or number over 16 bytes (at byte 44)");
  EXPECT_EQ(
      error_of(R"({"schema":"test/1","items":[{"size":)" + std::string(30, '1') + "}]}", caps),
      "doc.json: items[0].size: a string or number over 16 bytes (at byte 53)");
  // A string not kept is capped too: it would otherwise be held whole by the parser.
  EXPECT_EQ(error_of(R"({"other":")" + long_name + R"("})", caps),
            "doc.json: other: a string or number over 16 bytes (at byte 27)");
}

TEST(CheckedJson, FilesAreCheckedBeforeTheyAreRead) {
  const std::filesystem::path folder = std::filesystem::temp_directory_path() /
                                       ("gpumem-checked-json-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  Seen seen;
  std::string error;
  EXPECT_FALSE(read_file(folder.string(), test_shape(seen), {}, &error));
  EXPECT_EQ(error, folder.string() + ": is a folder, not a test document");
  const std::string big = (folder / "big.json").string();
  std::ofstream(big) << std::string(2048, ' ');
  EXPECT_FALSE(read_file(big, test_shape(seen), Caps{1024, 16}, &error));
  EXPECT_EQ(error, big + ": too large for a test document (over 1024 bytes)");
  const std::string good = (folder / "good.json").string();
  std::ofstream(good) << R"({"schema": "test/1", "items": [{"size": 5}]})";
  EXPECT_TRUE(read_file(good, test_shape(seen), {}, &error)) << error;
  EXPECT_EQ(seen.elements.back(), "items[0]=5");
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace gpumem::detail::json
