#include "cli/browser.hpp"

#include <regex>

namespace gpumem::testing {

std::vector<std::string> chromium(const std::string& folder, std::vector<std::string> arguments) {
  std::vector<std::string> command{"env",
                                   "HOME=" + folder,
                                   "chromium",
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--user-data-dir=" + folder + "/chromium"};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return command;
}

std::string element(const std::string& dom, const std::string& id) {
  const std::regex pattern("<[^>]* id=\"" + id + "\"[^>]*>([^<]*)<");
  std::smatch match;
  return std::regex_search(dom, match, pattern) ? match[1].str() : "(no #" + id + ")";
}

std::string attribute(const std::string& dom, const std::string& id, const std::string& name) {
  const std::regex pattern("<[^>]* id=\"" + id + "\"[^>]*" + name + "=\"([^\"]*)\"");
  std::smatch match;
  if (std::regex_search(dom, match, pattern)) return match[1].str();
  const std::regex reversed("<[^>]* " + name + "=\"([^\"]*)\"[^>]* id=\"" + id + "\"");
  return std::regex_search(dom, match, reversed) ? match[1].str() : "(none)";
}

}  // namespace gpumem::testing
