#include "site/include_search.hpp"

#include <chrono>
#include <sstream>

#include "util/file_util.hpp"

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
