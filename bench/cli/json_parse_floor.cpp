// The floor `gpumem report` and `gpumem diff` are measured against (bench/report_scaling.py): a
// plain nlohmann::json parse of each file named, the whole tree built and dropped, nothing kept.
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

int main(int argc, char** argv) {
  std::size_t values = 0;
  for (int at = 1; at < argc; ++at) {
    std::ifstream file(argv[at], std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    const nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
    if (document.is_discarded()) {
      std::cerr << argv[at] << ": not JSON\n";
      return 1;
    }
    values += document.size();
  }
  std::cout << values << "\n";
  return 0;
}
