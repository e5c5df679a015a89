// Loading an HTML report in headless Chromium (Debian's chromium) and reading back what its
// script drew: the DOM after the script ran, one element's text or attribute by id.
#pragma once

#include <string>
#include <vector>

#include "cli/command_runner.hpp"

namespace gpumem::testing {

// The command line that runs headless Chromium with `arguments` ("--dump-dom", a file:// URL),
// its profile and home under `folder`.
std::vector<std::string> chromium(const std::string& folder, std::vector<std::string> arguments);

// Loads `url` and prints the DOM once its script ran (within 5 s of virtual time).
CommandResult dump_dom(const std::string& folder, const std::string& url);

// Takes a 1280x1400 screenshot of the page at `html` into folder/name and checks that it is a
// PNG with something drawn on it (gtest failures otherwise); prints its path.
void expect_screenshot(const std::string& folder, const std::string& html, const std::string& name);

// The text of the element with id `id` in a dumped DOM, or "(no #id)".
std::string element(const std::string& dom, const std::string& id);
// The value of attribute `name` of the element with id `id`, or "(none)".
std::string attribute(const std::string& dom, const std::string& id, const std::string& name);

}  // namespace gpumem::testing
