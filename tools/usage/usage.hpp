// How the gpumem command explains itself: --help (one usage line, enum options by their words)
// and its usage errors (did you mean, the missing argument with the usage line, the option, unit
// and range of a bad value), all in one place. Every command's options are declared with these.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Option;
class ParseError;
}  // namespace CLI

namespace gpumem::cli {

// The exit status of every usage error (docs/cli.md).
inline constexpr int usage_status = 2;

// Installs the help formatter and the error messages on the top-level app; before any
// subcommand is added (they inherit both). --help's descriptions are wrapped at spaces to
// `help_width` columns (the terminal's).
void install_usage(CLI::App& app, std::size_t help_width = 80);

// The command's one usage line without "Usage: " ("gpumem run [OPTIONS] -- COMMAND [ARGS...]");
// without one, CLI11's is used.
void set_usage(CLI::App& command, std::string line);
std::string usage_line(const CLI::App& command);

// A number option: its value must be a number (a whole one if `whole`) from `low` to `high`
// (high: infinity for no bound); `unit` names what it counts in --help and in errors
// ("seconds": SECONDS, "--interval abc: not a number of seconds (0.01 to 86400)").
struct NumberRange {
  std::string unit;
  double low = 0;
  double high = 0;
  bool whole = false;
  std::string noun;  // what a value must be, if not "a [whole] number of <unit>"
};
CLI::Option* number_option(CLI::App& command, CLI::Option* option, const NumberRange& range);

// An option whose value is one of `words` (any case), shown as "exact|sampled|auto"; each word
// stands for the value CLI11 converts its text to.
CLI::Option* word_option(CLI::App& command, CLI::Option* option,
                         const std::vector<std::pair<std::string, std::string>>& words);
template <typename Enum>
CLI::Option* enum_option(CLI::App& command, CLI::Option* option,
                         const std::vector<std::pair<std::string, Enum>>& words) {
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& [word, value] : words) {
    texts.emplace_back(word, std::to_string(static_cast<long long>(value)));
  }
  return word_option(command, option, texts);
}

// Errors a command finds in its own arguments after CLI11 parsed them, reported as the others.
[[noreturn]] void throw_missing_argument(const std::string& name);  // e.g. "COMMAND"
[[noreturn]] void throw_unknown_option(const std::string& word);

// Prints the message for a parse error to stderr; returns usage_status.
int report_usage_error(const CLI::App& app, const CLI::ParseError& error);

// The closest of `names` to `word` (optimal string alignment distance), if close enough to be
// what was meant; else "".
std::string closest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace gpumem::cli
