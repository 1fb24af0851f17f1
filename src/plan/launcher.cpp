#include "kbuild/launcher.hpp"

#include <filesystem>
#include <sstream>

#include "kbuild/error.hpp"
#include "kbuild/process.hpp"
#include "util/shell.hpp"

namespace fs = std::filesystem;

namespace kbuild {

std::string Launcher::name() const {
  return argv.empty() ? "" : fs::path(argv[0]).filename().string();
}

Launcher parse_launcher(const std::string& text) {
  Launcher l;
  auto words = shell_split(text);
  if (!words) throw Error(ErrorKind::usage, "--launcher '" + text + "' has an unbalanced quote");
  l.argv = *words;
  const std::string name = l.name();
  l.distributes = name == "distcc" || name == "icecc" || name == "pump";
  l.split = l.distributes || name == "ccache" || name == "sccache";
  return l;
}

std::vector<std::string> resolve_native_flags(const std::string& compiler, const Environment& env) {
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r =
      run_process({compiler, "-###", "-march=native", "-E", "-x", "c++", "/dev/null"}, opts);
  std::istringstream lines(r.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("cc1") == std::string::npos) continue;
    auto words = shell_split(line);
    if (!words) break;
    std::vector<std::string> flags;
    bool after_march = false;
    for (const std::string& w : *words) {
      if (w.rfind("-march=", 0) == 0) after_march = true;
      if (after_march && (w.rfind("-m", 0) == 0 || w.rfind("--param=", 0) == 0)) flags.push_back(w);
    }
    return flags;
  }
  return {};
}

}  // namespace kbuild
