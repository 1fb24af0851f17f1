#include "site/package_version.hpp"

#include <fstream>

namespace kbuild {

std::optional<std::string> read_package_version(const std::string& version_file) {
  std::ifstream in(version_file);
  std::string line;
  // A version.py is a few lines; a huge file is not one.
  for (int n = 0; n < 200 && std::getline(in, line); ++n) {
    if (line.rfind("__version__", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto open = line.find_first_of("'\"", eq);
    if (open == std::string::npos) continue;
    auto close = line.find(line[open], open + 1);
    if (close == std::string::npos || close == open + 1) continue;
    return line.substr(open + 1, close - open - 1);
  }
  return std::nullopt;
}

}  // namespace kbuild
