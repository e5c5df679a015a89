#include "usage.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "gpumem/internal/printable_text.hpp"

namespace gpumem::cli {
namespace {

// The columns `text` takes: its characters (UTF-8's continuation bytes take none). The help is
// gpumem's own text, in which every character takes one column.
std::size_t columns(const std::string& text) {
  std::size_t count = 0;
  for (unsigned char byte : text) count += (byte & 0xC0) != 0x80;
  return count;
}

// `text` wrapped at spaces to `width` columns, each line after the first (and every line of a
// paragraph after a '\n' in it) starting with `indent`; the first line starts after `used`
// columns. A word longer than a line stays whole on a line of its own: a terminal that breaks
// it is better than a word broken by gpumem.
std::string wrapped(const std::string& text, std::size_t used, std::size_t width,
                    const std::string& indent) {
  std::string out;
  std::size_t at_column = used;
  bool line_empty = true;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find_first_of(" \n", at), text.size());
    const std::string word = text.substr(at, end - at);
    if (!word.empty()) {
      if (!line_empty && at_column + 1 + columns(word) > width) {
        out += "\n" + indent;
        at_column = columns(indent);
        line_empty = true;
      }
      if (!line_empty) {
        out += ' ';
        ++at_column;
      }
      out += word;
      at_column += columns(word);
      line_empty = false;
    }
    if (end < text.size() && text[end] == '\n') {
      out += "\n" + indent;
      at_column = columns(indent);
      line_empty = true;
    }
    at = end + 1;
  }
  return out;
}

// CLI11's formatter, with each command's one usage line and what each checked option takes, and
// descriptions wrapped at spaces to the output's width (CLI11 2.1 writes each on one line, which a
// terminal breaks wherever the width falls: "Ev|ery").
class UsageFormatter : public CLI::Formatter {
 public:
  std::map<const CLI::App*, std::string> usages;
  // Options whose check names the value ("--interval abc: ..."), with what they take.
  std::map<const CLI::Option*, std::string> takes;
  std::size_t width = 80;

  std::string make_usage(const CLI::App* app, std::string name) const override {
    const auto usage = usages.find(app);
    if (usage == usages.end()) return CLI::Formatter::make_usage(app, std::move(name));
    return "Usage: " + usage->second + "\n";
  }

  std::string make_option(const CLI::Option* option, bool is_positional) const override {
    return two_columns(make_option_name(option, is_positional) + make_option_opts(option),
                       make_option_desc(option));
  }

  std::string make_subcommand(const CLI::App* command) const override {
    return two_columns(command->get_display_name(true), command->get_description());
  }

  std::string make_description(const CLI::App* app) const override {
    return paragraph(CLI::Formatter::make_description(app));
  }

  std::string make_footer(const CLI::App* app) const override {
    return paragraph(CLI::Formatter::make_footer(app));
  }

 private:
  std::string paragraph(std::string text) const {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text.empty() ? text : wrapped(text, 0, width, "") + "\n";
  }

  // "  NAME   description" as CLI11 lays it out, the description wrapped in its column (or, at
  // widths where the column would be too narrow, under the name).
  std::string two_columns(const std::string& name, const std::string& description) const {
    const std::size_t column = get_column_width();
    std::string out = "  " + name;
    if (description.empty()) return out + "\n";
    const bool narrow = width < column + 20;
    const std::string indent(narrow ? 6 : column, ' ');
    if (narrow || columns(out) >= column) {
      out += "\n" + indent;
    } else {
      out += std::string(column - columns(out), ' ');
    }
    return out + wrapped(description, columns(indent), width, indent) + "\n";
  }
};

UsageFormatter& formatter_of(const CLI::App& command) {
  auto* formatter = dynamic_cast<UsageFormatter*>(command.get_formatter().get());
  if (formatter == nullptr) throw std::logic_error("install_usage() was not called on the app");
  return *formatter;
}

// "gpumem watch" for watch's app.
std::string full_name(const CLI::App& command) {
  std::string name = command.get_name();
  for (const CLI::App* parent = command.get_parent(); parent != nullptr;
       parent = parent->get_parent()) {
    name = parent->get_name() + " " + name;
  }
  return name;
}

// 0.01, 86400, 1000000: as written, not as printf's %f writes them.
std::string number_text(double value) {
  if (std::floor(value) == value && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string bounds_text(const NumberRange& range) {
  if (std::isinf(range.high)) return number_text(range.low) + " or more";
  return number_text(range.low) + " to " + number_text(range.high);
}

std::optional<double> parse_number(const std::string& text, bool whole) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  if (whole) {
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return std::nullopt;
    return static_cast<double>(value);
  }
  const double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

const CLI::App* active_command(const CLI::App& app) {
  const CLI::App* active = &app;
  while (!active->get_subcommands().empty()) active = active->get_subcommands().back();
  return active;
}

std::vector<std::string> command_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : command.get_subcommands({})) {
    if (!sub->get_group().empty()) names.push_back(sub->get_name());  // not the hidden ones
  }
  return names;
}

std::vector<std::string> long_option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* at = &command; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option* option : at->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  return names;
}

std::string with_suggestion(const std::string& word, const std::vector<std::string>& names) {
  const std::string closest = closest_name(word, names);
  return closest.empty() ? std::string{} : "; did you mean " + closest + "?";
}

std::string unknown_option(const CLI::App& command, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  return "unknown option " + name +
         (name.rfind("--", 0) == 0 ? with_suggestion(name, long_option_names(command)) : "");
}

// "FILE..." for report's files: what a missing positional is called in the usage line.
std::string positional_name(const CLI::Option& option) {
  std::string name = option.get_name(true, false);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (name.size() > 1 && name.back() == 'S' && option.get_expected_max() > 1) name.pop_back();
  return option.get_expected_max() > 1 ? name + "..." : name;
}

std::string first_lower(std::string text) {
  if (!text.empty()) text.front() = static_cast<char>(std::tolower(text.front()));
  return text;
}

// By the type, not get_name(): CLI11 names some errors after the app they come from.
template <typename Type>
bool is(const CLI::ParseError& error) {
  return dynamic_cast<const Type*>(&error) != nullptr;
}

struct Message {
  std::string text;
  bool with_usage = false;
};

Message top_level_message(const CLI::App& app) {
  for (const std::string& word : app.remaining()) {
    if (word.rfind('-', 0) == 0) return {unknown_option(app, word), false};
    const std::string closest = closest_name(word, command_names(app));
    if (!closest.empty()) return {"unknown command " + word + "; did you mean " + closest + "?"};
    std::string names;
    for (const std::string& name : command_names(app)) names += (names.empty() ? "" : ", ") + name;
    return {"unknown command " + word + " (the commands: " + names + ")"};
  }
  return {"missing COMMAND", true};
}

Message error_message(const CLI::App& app, const CLI::App& active, const CLI::ParseError& error) {
  const std::string what = error.what();
  if (is<CLI::RequiredError>(error)) {
    if (&active == &app) return top_level_message(app);
    const std::string name = what.substr(0, what.rfind(" is required"));
    const CLI::Option* option = active.get_option_no_throw(name);
    if (option == nullptr || !option->get_positional()) return {"missing " + name, true};
    return {"missing " + positional_name(*option) + ": " + first_lower(option->get_description()),
            true};
  }
  if (is<CLI::ExtrasError>(error)) {
    // CLI11 names the words in the message only ("... not expected: 2 --intreval"), last first.
    std::vector<std::string> words;
    std::istringstream listed(what.substr(what.find(": ") + 2));
    for (std::string word; listed >> word;) words.insert(words.begin(), word);
    for (const std::string& word : words) {
      if (word.rfind('-', 0) == 0) return {unknown_option(active, word)};
    }
    if (!words.empty()) return {"unexpected argument " + words.front(), true};
  }
  const UsageFormatter& formatter = formatter_of(app);
  const std::vector<const CLI::Option*> own = active.get_options();
  for (const auto& [option, takes] : formatter.takes) {
    if (std::find(own.begin(), own.end(), option) == own.end()) continue;
    const std::string name = option->get_name();
    if (what.rfind(name + ": ", 0) != 0) continue;
    if (is<CLI::ValidationError>(error)) return {name + " " + what.substr(name.size() + 2)};
    if (is<CLI::ArgumentMismatch>(error)) return {name + " needs a value (" + takes + ")", true};
  }
  if (is<CLI::ArgumentMismatch>(error)) {
    const std::string name = what.substr(0, what.find(':'));
    if (active.get_option_no_throw(name) != nullptr) return {name + " needs a value", true};
  }
  return {what};
}

// Optimal string alignment: edits, with a swap of two neighbours as one.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

void install_usage(CLI::App& app, std::size_t help_width) {
  auto formatter = std::make_shared<UsageFormatter>();
  formatter->width = help_width;
  app.formatter(formatter);
  set_usage(app, app.get_name() + " [OPTIONS] COMMAND [ARGS...]");
}

void set_usage(CLI::App& command, std::string line) {
  formatter_of(command).usages[&command] = std::move(line);
}

std::string usage_line(const CLI::App& command) {
  std::string line = formatter_of(command).make_usage(&command, full_name(command));
  line = line.substr(line.find(": ") + 2);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

CLI::Option* number_option(CLI::App& command, CLI::Option* option, const NumberRange& range) {
  const std::string bounds = bounds_text(range);
  const std::string noun =
      !range.noun.empty()
          ? range.noun
          : std::string(range.whole ? "a whole number of " : "a number of ") + range.unit;
  option->check(CLI::Validator(
      [range, bounds, noun](std::string& text) -> std::string {
        const std::optional<double> value = parse_number(text, range.whole);
        if (!value) return text + ": not " + noun + " (" + bounds + ")";
        if (*value < range.low || *value > range.high) {
          return text + ": out of range (" + range.unit + ": " + bounds + ")";
        }
        return {};
      },
      ""));
  std::string type = range.unit;
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) {
    return static_cast<char>(c == ' ' ? '_' : std::toupper(c));
  });
  option->type_name(type);
  formatter_of(command).takes[option] = range.unit + ", " + bounds;
  return option;
}

CLI::Option* word_option(CLI::App& command, CLI::Option* option,
                         const std::vector<std::pair<std::string, std::string>>& words) {
  std::string choices;
  for (const auto& word : words) choices += (choices.empty() ? "" : "|") + word.first;
  option->transform(CLI::Validator(
      [words, choices](std::string& text) -> std::string {
        const std::string word = lowered(text);
        for (const auto& [name, value] : words) {
          if (name == word) {
            text = value;
            return {};
          }
        }
        return text + ": not one of " + choices;
      },
      ""));
  option->type_name(choices);
  formatter_of(command).takes[option] = choices;
  return option;
}

void throw_missing_argument(const std::string& name) {
  throw CLI::RequiredError(name);
}

void throw_unknown_option(const std::string& word) {
  throw CLI::ExtrasError({word});
}

int report_usage_error(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App& active = *active_command(app);
  const Message message = error_message(app, active, error);
  // The message may quote any argument: shown through the one function for untrusted text.
  std::cerr << full_name(active) << ": " << detail::printable(message.text) << "\n";
  if (message.with_usage) std::cerr << "Usage: " << usage_line(active) << "\n";
  return usage_status;
}

std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  const auto bare = [](const std::string& name) {
    const std::size_t letters = name.find_first_not_of('-');
    return letters == std::string::npos ? std::string{} : name.substr(letters);
  };
  const std::string typed = lowered(bare(word));
  // A word far longer than any name is no typo of one (and its table would grow with it).
  if (typed.size() > 64) return {};
  // One edit in four letters, two in up to nine, three beyond: a typo, not another word.
  const std::size_t allowed = std::min<std::size_t>(3, 1 + typed.size() / 5);
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& name : names) {
    const std::size_t distance = edit_distance(typed, lowered(bare(name)));
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace gpumem::cli
