
#include "site/search.hpp"

#include <chrono>
#include <filesystem>
#include <sstream>

#include "util/file_system.hpp"

namespace fs = std::filesystem;

namespace kbuild {

std::vector<std::string> library_files(const std::string& name, const std::string& dir) {
  if (name.size() > 1 && name[0] == ':') return {dir + "/" + name.substr(1)};  // -l:libfoo.a
  return {dir + "/lib" + name + ".so", dir + "/lib" + name + ".a"};
}

std::optional<std::string> find_shared_library(const std::string& name, const Environment& env) {
  std::vector<std::string> dirs;
  if (auto ld = env.get_nonempty("LD_LIBRARY_PATH")) {
    std::istringstream parts(*ld);
    std::string d;
    while (std::getline(parts, d, ':'))
      if (!d.empty()) dirs.push_back(d);
  }
  for (const char* d :
       {"/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib", "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"})
    dirs.push_back(d);
  const std::string prefix = "lib" + name + ".so";
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      std::string file = it->path().filename().string();
      if (file == prefix || file.rfind(prefix + ".", 0) == 0) return d;
    }
  }
  return std::nullopt;
}

}  // namespace kbuild
