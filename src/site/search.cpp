
#include "site/search.hpp"

#include <chrono>
#include <filesystem>
#include <sstream>

#include "util/file_system.hpp"

namespace kbuild {

std::vector<std::string> include_search_dirs(const std::vector<std::string>& argv,
                                             const Environment& env, ProcessRunner& processes) {
  if (argv.empty()) return {};
  // Only the words that change the search list.
  std::vector<std::string> probe{argv[0]};
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    bool takes_value = w == "-I" || w == "-isystem" || w == "-iquote" || w == "-idirafter" ||
                       w == "-isysroot" || w == "--sysroot" || w == "-iprefix" || w == "-B";
    if (takes_value && i + 1 < argv.size()) {
      probe.push_back(w);
      probe.push_back(argv[++i]);
    } else if ((w.rfind("-I", 0) == 0 || w.rfind("-isystem", 0) == 0 ||
                w.rfind("-iquote", 0) == 0 || w.rfind("-idirafter", 0) == 0 ||
                w.rfind("--sysroot=", 0) == 0 || w.rfind("-B", 0) == 0 ||
                w.rfind("-std=", 0) == 0 || w.rfind("-stdlib=", 0) == 0 || w == "-nostdinc" ||
                w == "-nostdinc++" || w == "-m32" || w == "-m64")) {
      probe.push_back(w);
    }
  }
  for (const char* w : {"-E", "-v", "-x", "c++", "/dev/null", "-o", "/dev/null"})
    probe.emplace_back(w);
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r = processes.run(probe, opts);
  if (!r.success()) return {};
  std::vector<std::string> dirs;
  std::istringstream lines(r.err);
  std::string line;
  bool in_list = false;
  while (std::getline(lines, line)) {
    if (line.rfind("#include ", 0) == 0 && line.find("search starts here") != std::string::npos) {
      in_list = true;
    } else if (line.rfind("End of search list", 0) == 0) {
      break;
    } else if (in_list && line.size() > 1 && line[0] == ' ') {
      std::string dir = line.substr(1);
      const std::string framework = " (framework directory)";
      if (dir.size() > framework.size() &&
          dir.compare(dir.size() - framework.size(), framework.size(), framework) == 0)
        dir.resize(dir.size() - framework.size());
      dirs.push_back(normal_path(dir));
    }
  }
  return dirs;
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

std::vector<std::string> library_search_dirs(const std::string& compiler,
                                             const std::vector<std::string>& libraries_dirs,
                                             const Environment& env, ProcessRunner& processes) {
  std::vector<std::string> dirs = libraries_dirs;
  auto split = [&dirs](const std::string& list) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t colon = list.find(':', start);
      std::string dir =
          list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!dir.empty()) dirs.push_back(dir);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  };
  split(env.get("LIBRARY_PATH").value_or(""));
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r = processes.run({compiler, "-print-search-dirs"}, opts);
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("libraries: =", 0) == 0) split(line.substr(12));
  for (std::string& d : dirs) d = normal_path(d);
  return dirs;
}

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
