#include <cctype>
#include <string>
#include <vector>

#include "gpumem/trace.hpp"

namespace gpumem {
namespace {

constexpr std::string_view kOperator = "operator";

bool starts_with_at(std::string_view text, std::size_t at, std::string_view prefix) {
  return text.substr(at, prefix.size()) == prefix;
}

// Clang names unnamed scopes "(anonymous namespace)", "(anonymous class)", "(lambda at f.cpp:3)".
bool unnamed_scope_at(std::string_view text, std::size_t at) {
  return text[at] == '(' &&
         (starts_with_at(text, at + 1, "anonymous") || starts_with_at(text, at + 1, "lambda at"));
}

std::size_t matching_close(std::string_view text, std::size_t open) {
  const char opening = text[open];
  const char closing = opening == '(' ? ')' : opening == '<' ? '>' : opening == '[' ? ']' : '}';
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == opening) ++depth;
    if (text[i] == closing && --depth == 0) return i;
  }
  return text.size();
}

// Where "operator" at `at` ends its symbol: "operator()", "operator<<", "operator new[]",
// "operator int".
std::size_t operator_end(std::string_view text, std::size_t at) {
  std::size_t i = at + kOperator.size();
  if (starts_with_at(text, i, "()")) return i + 2;
  if (starts_with_at(text, i, "[]")) return i + 2;
  while (i < text.size() && text[i] != '(') ++i;
  return i;
}

bool operator_at(std::string_view text, std::size_t at) {
  if (!starts_with_at(text, at, kOperator)) return false;
  const bool word_start = at == 0 || text[at - 1] == ':' || text[at - 1] == ' ';
  const char next = at + kOperator.size() < text.size() ? text[at + kOperator.size()] : '(';
  const bool word_end = !(std::isalnum(static_cast<unsigned char>(next)) || next == '_');
  return word_start && (word_end || next == ' ');
}

// The qualified name of the outermost function in a signature: what precedes its parameter
// list, with the return type and specifiers dropped.
std::string_view qualified_name(std::string_view signature) {
  std::size_t name_start = 0;
  int angle = 0;
  for (std::size_t i = 0; i < signature.size(); ++i) {
    const char c = signature[i];
    if (operator_at(signature, i)) {
      i = operator_end(signature, i) - 1;
      continue;
    }
    if (c == '(' && unnamed_scope_at(signature, i)) {
      i = matching_close(signature, i);
      continue;
    }
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c == ' ' && angle == 0) name_start = i + 1;
    if (c == '(' && angle == 0) return signature.substr(name_start, i - name_start);
  }
  return signature.substr(name_start);
}

// Splits "a::b<T>::c" into {"a", "b", "c"}: template arguments dropped, unnamed scopes too.
std::vector<std::string> scopes(std::string_view name) {
  std::vector<std::string> parts;
  std::string part;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (operator_at(name, i)) {
      const std::size_t end = operator_end(name, i);
      part += name.substr(i, end - i);
      i = end - 1;
      continue;
    }
    if (name[i] == '<' || (name[i] == '(' && unnamed_scope_at(name, i)) || name[i] == '{') {
      const bool unnamed = name[i] != '<';
      i = matching_close(name, i);
      if (unnamed) part.clear();
      continue;
    }
    if (starts_with_at(name, i, "::")) {
      if (!part.empty()) parts.push_back(std::move(part));
      part.clear();
      ++i;
      continue;
    }
    part += name[i];
  }
  if (!part.empty()) parts.push_back(std::move(part));
  return parts;
}

}  // namespace

std::string function_context(std::string_view signature) {
  const std::vector<std::string> parts = scopes(qualified_name(signature));
  if (parts.empty()) return std::string(signature);
  // "Class::method", as fastai.utils.mem's __qualname__: a signature cannot tell a class from a
  // namespace, so the innermost scope is kept and the outer ones dropped.
  if (parts.size() == 1) return parts.back();
  return parts[parts.size() - 2] + "::" + parts.back();
}

}  // namespace gpumem
