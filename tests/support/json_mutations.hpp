// A document's text mutated as a fuzzer would, for the readers' never-crash tests: bytes changed,
// the text cut, runs deleted or duplicated, numbers replaced by what a schema does not expect.
#pragma once

#include <iterator>
#include <random>
#include <string>

namespace gpumem::testing {

// `original` (not empty) with one to three edits drawn from `random`; never empty.
inline std::string mutated_json(const std::string& original, std::mt19937& random) {
  static const char* const kReplacements[] = {
      "-1",   "1e999", "18446744073709551616", "null",       "\"x\"", "[]", "{}", "3", "0", "99",
      "true", "1.5",   "\"\\u0000\"",          "\"\\ud800\""};
  std::string text = original;
  const int edits = 1 + static_cast<int>(random() % 3);
  for (int edit = 0; edit < edits; ++edit) {
    const std::size_t at = random() % text.size();
    switch (random() % 5) {
      case 0:
        text[at] = static_cast<char>(random() % 256);
        break;
      case 1:
        text.resize(at);
        break;
      case 2:
        text.erase(at, random() % 40);
        break;
      case 3: {  // a number replaced by something else
        const std::size_t digit = text.find_first_of("0123456789", at);
        if (digit == std::string::npos) break;
        const std::size_t end = text.find_first_not_of("0123456789.", digit);
        text.replace(digit, end - digit, kReplacements[random() % std::size(kReplacements)]);
        break;
      }
      default:
        text.insert(at, text.substr(random() % text.size(), random() % 60));
    }
    if (text.empty()) text = "{";
  }
  return text;
}

}  // namespace gpumem::testing
