// Reads the Prometheus text format back, strictly enough to catch what Prometheus would reject:
// samples before their HELP/TYPE lines, a family split in two, bad escapes, unparsable values.
#pragma once

#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpumem::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family -> gauge/counter
  std::map<std::string, std::string> helps;
  std::vector<Sample> samples;

  std::vector<Sample> find(std::string_view name,
                           const std::map<std::string, std::string>& labels = {}) const {
    std::vector<Sample> found;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match = match && it != s.labels.end() && it->second == v;
      }
      if (match) found.push_back(s);
    }
    return found;
  }
  double value(std::string_view name, const std::map<std::string, std::string>& labels = {}) const {
    auto found = find(name, labels);
    if (found.size() != 1) {
      throw std::runtime_error(std::string(name) + ": " + std::to_string(found.size()) +
                               " samples match");
    }
    return found.front().value;
  }
};

inline Exposition parse_exposition(std::string_view text) {
  Exposition out;
  std::set<std::string> closed;  // families whose samples ended
  std::string current;
  auto fail = [](const std::string& why, std::string_view line) {
    throw std::runtime_error(why + ": " + std::string(line));
  };
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    if (newline == std::string_view::npos) fail("no final newline", text);
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      std::string_view rest = line.substr(7);
      std::string name(rest.substr(0, rest.find(' ')));
      std::string value(rest.substr(rest.find(' ') + 1));
      if (name != current) {
        if (!current.empty()) closed.insert(current);
        if (closed.count(name)) fail("family split", line);
        current = name;
      }
      (line[2] == 'H' ? out.helps : out.types)[name] = value;
      continue;
    }
    if (line.empty() || line.front() == '#') fail("unexpected line", line);
    Sample sample;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    sample.name = line.substr(0, i);
    if (sample.name != current || !out.types.count(current) || !out.helps.count(current)) {
      fail("sample outside its family", line);
    }
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line.at(i) != '}') {
        std::size_t eq = line.find('=', i);
        std::string key(line.substr(i, eq - i));
        if (line.at(eq + 1) != '"') fail("unquoted label", line);
        std::string value;
        for (i = eq + 2; line.at(i) != '"'; ++i) {
          if (line[i] == '\\') {
            char next = line.at(++i);
            if (next == 'n')
              value += '\n';
            else if (next == '\\' || next == '"')
              value += next;
            else
              fail("bad escape", line);
          } else {
            value += line[i];
          }
        }
        ++i;
        if (sample.labels.count(key)) fail("repeated label", line);
        sample.labels[key] = value;
        if (line.at(i) == ',') ++i;
      }
      ++i;
    }
    if (line.at(i) != ' ') fail("no value", line);
    std::string value(line.substr(i + 1));
    char* end = nullptr;
    sample.value = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') fail("bad value", line);
    out.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace gpumem::testing
