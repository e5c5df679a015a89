// The attribution document's streaming reader, on support's checked-JSON reader
// (gpumem/internal/checked_json.hpp): everything kept, and each element of the large lists
// converted into the model as soon as it is complete and taken out of the tree.
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "attribution/document_fields.hpp"
#include "gpumem/internal/attribution_document.hpp"
#include "gpumem/internal/checked_json.hpp"

namespace gpumem::detail::attribution {
namespace {

using fields::BadField;
using fields::Json;
using fields::Object;
using fields::Step;

constexpr const char* kWhat = "a gpumem attribution document";

std::string check_schema(const Json& value) {
  if (!value.is_string())
    return std::string("not a gpumem attribution document (no \"schema\"; expected ") + kSchema +
           ")";
  const std::string& name = value.get_ref<const std::string&>();
  if (name == kSchema) return {};
  return name.rfind("gpumem.attribution/", 0) == 0
             ? "schema " + name + " is a version this gpumem does not read (it reads " + kSchema +
                   ")"
             : "schema " + fields::shown(value) + " is not an attribution document (expected " +
                   kSchema + ", written by gpumem run --attribute)";
}

// The model as the stream hands it over: each element of the lists read element by element,
// and the elements that gather what was read of their own lists.
class Builder {
 public:
  explicit Builder(const std::string& path) { document_.path = path; }

  json::Shape shape() {
    json::Shape shape;
    shape.what = kWhat;
    shape.check_schema = check_schema;
    shape.streamed = {"frames",   "stacks",          "snapshots", "snapshots[].blocks",
                      "timeline", "timeline[].steps"};
    shape.restart = [this](const std::string& list) { restart(list); };
    shape.element = [this](const std::string& list, const std::string& where, const Json& element) {
      try {
        read_element(list, where, element);
      } catch (const Json::exception& bad) {
        throw BadField(bad.what());
      }
    };
    shape.field_done = [this](const std::string& name) {
      if (name == "frames") frames_done_ = true;
      if (name == "stacks") stacks_done_ = true;
    };
    // One name twice would keep the last value in a tree and both lists in a stream.
    shape.root_fields_once = true;
    return shape;
  }

  // The rest of the document from what the stream kept (`root`). @throws BadField
  Document finish(const Json& root) {
    fields::finish_document(root, streamed_, document_);
    fields::check_indices(document_, frames_deferred_, stacks_deferred_);
    return std::move(document_);
  }

 private:
  void restart(const std::string& list) {
    if (list == "frames") streamed_.frames = true;
    if (list == "stacks") streamed_.stacks = true;
    if (list == "snapshots") streamed_.snapshots = true;
    if (list == "timeline") streamed_.timeline = true;
    if (list == "snapshots[].blocks") {  // a name twice in one object: the last list stands
      blocks_.clear();
      blocks_streamed_ = true;
    }
    if (list == "timeline[].steps") {
      steps_.clear();
      steps_streamed_ = true;
    }
  }

  // The lists with the most elements first.
  void read_element(const std::string& list, const std::string& where, const Json& value) {
    if (list == "snapshots[].blocks") {
      stacks_deferred_ = stacks_deferred_ || !stacks_done_;
      blocks_.push_back(fields::read_block(Object(value, where + "."), stacks()));
    } else if (list == "timeline[].steps") {
      steps_.push_back(fields::read_step(value, where, steps_));
    } else if (list == "frames") {
      document_.frames.push_back(fields::read_frame(Object(value, where + ".")));
    } else if (list == "stacks") {
      // Frames not all read yet (a document in another order than gpumem writes): their
      // indices are checked at the end.
      frames_deferred_ = frames_deferred_ || !frames_done_;
      document_.stacks.push_back(fields::read_stack(
          value, where,
          frames_done_ ? std::optional<std::size_t>(document_.frames.size()) : std::nullopt));
    } else if (list == "snapshots") {
      stacks_deferred_ = stacks_deferred_ || !stacks_done_;
      std::vector<Block>* blocks = blocks_streamed_ ? &blocks_ : nullptr;
      blocks_streamed_ = false;
      document_.snapshots.push_back(
          fields::read_snapshot(Object(value, where + "."), stacks(), document_.warnings, blocks));
      blocks_.clear();
    } else if (list == "timeline") {
      std::vector<Step>* steps = steps_streamed_ ? &steps_ : nullptr;
      steps_streamed_ = false;
      document_.timeline.push_back(fields::read_series(Object(value, where + "."), steps));
      steps_.clear();
    }
  }

  // How many stacks an index may point into: all of them once read, any number until then.
  std::size_t stacks() const {
    return stacks_done_ ? document_.stacks.size() : std::numeric_limits<std::size_t>::max();
  }

  Document document_;
  fields::Streamed streamed_;
  bool frames_done_ = false;
  bool stacks_done_ = false;
  bool frames_deferred_ = false;  // stacks read before the frames were complete
  bool stacks_deferred_ = false;  // blocks read before the stacks were complete
  std::vector<Block> blocks_;     // the current snapshot's, read so far
  bool blocks_streamed_ = false;
  std::vector<Step> steps_;  // the current series'
  bool steps_streamed_ = false;
};

template <class ReadRoot>
std::optional<Document> read(const std::string& path, std::string* error, ReadRoot read_root) {
  auto fail = [&](const std::string& why) -> std::optional<Document> {
    if (error != nullptr) *error = path + ": " + why;
    return std::nullopt;
  };
  try {
    Builder builder(path);
    const json::Shape shape = builder.shape();
    const std::optional<Json> root = read_root(shape);
    if (!root) return std::nullopt;
    return builder.finish(*root);
  } catch (const std::bad_alloc&) {
    return fail("too large to hold in memory");
  } catch (const BadField& bad) {
    return fail(bad.what());
  } catch (const Json::exception& bad) {
    return fail(bad.what());
  }
}

}  // namespace

std::optional<Document> stream_document(std::istream& input, std::uint64_t size,
                                        const std::string& path, std::string* error) {
  return read(path, error, [&](const json::Shape& shape) {
    return json::read_stream(input, size, path, shape, fields::kCaps, error);
  });
}

std::optional<Document> stream_document(std::string_view text, const std::string& path,
                                        std::string* error) {
  return read(path, error, [&](const json::Shape& shape) {
    return json::read_text(text, path, shape, fields::kCaps, error);
  });
}

}  // namespace gpumem::detail::attribution
