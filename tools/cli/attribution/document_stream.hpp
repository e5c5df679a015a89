// An attribution document read as it streams in (nlohmann's SAX parser): refused at its first
// byte that is not JSON, at a root that is not an object, at a schema that is not
// gpumem.attribution/1 and, once the schema is known, at its first field in error; the large
// lists (frames, stacks, each snapshot's blocks, the timeline's steps) read element by element
// into the Document as each one completes, so what it holds is the Document and one element of
// JSON at a time, not the whole text and its JSON tree.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include "attribution/document.hpp"

namespace gpumem::cli::attribution {

// `size`: the input's length in bytes, to tell a document cut short from a bad byte. Errors
// name `path` ("snap.json: not valid JSON at byte 2").
std::optional<Document> stream_document(std::istream& input, std::uint64_t size,
                                        const std::string& path, std::string* error);
std::optional<Document> stream_document(std::string_view text, const std::string& path,
                                        std::string* error);

}  // namespace gpumem::cli::attribution
