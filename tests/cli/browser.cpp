#include "cli/browser.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
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

CommandResult dump_dom(const std::string& folder, const std::string& url) {
  return run_command(chromium(folder, {"--virtual-time-budget=5000", "--dump-dom", url}),
                     std::chrono::seconds(60));
}

void expect_screenshot(const std::string& folder, const std::string& html,
                       const std::string& name) {
  const std::string path = folder + "/" + name;
  const CommandResult shot =
      run_command(chromium(folder, {"--window-size=1280,1400", "--virtual-time-budget=5000",
                                    "--screenshot=" + path, "file://" + html}),
                  std::chrono::seconds(60));
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const std::string png = read_file(path);
  ASSERT_GT(png.size(), 20000u) << "a blank page?";
  EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
  std::cout << "screenshot: " << path << "\n";
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
