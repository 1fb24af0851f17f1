
#include "run/load_check.hpp"

#include <dlfcn.h>
#include <chrono>
#include <regex>
#include <sstream>

#include "kbuild/error.hpp"
#include "util/process.hpp"

namespace kbuild {

namespace {

std::string path_list(const std::vector<std::string>& dirs) {
  std::string list;
  for (const std::string& d : dirs) list += (list.empty() ? "" : ":") + d;
  return list;
}

}  // namespace

std::string rpath_hint(const std::vector<std::string>& library_dirs) {
  std::string entries, flags;
  for (const std::string& d : library_dirs) {
    entries += (entries.empty() ? "" : ", ") + std::string("\"Wl,-rpath,") + d + "\"";
    flags += (flags.empty() ? "" : " ") + std::string("-Wl,-rpath,") + d;
  }
  return "give it a RUNPATH: in its device file, \"ldflags\": [" + entries +
         "] (no leading '-': Inductor adds it), or on the command line --extra-flags '" + flags +
         "'";
}

LoadCheckResult check_load(const LoadCheckSettings& settings, const std::string& library,
                           const std::vector<std::string>& library_dirs, const Environment& env,
                           ProcessRunner& processes) {
  std::vector<std::string> argv = settings.loader;
  argv.push_back(library);
  argv.insert(argv.end(), settings.required_symbols.begin(), settings.required_symbols.end());

  Environment child = env;
  std::string path;
  for (const std::string& d : library_dirs) path += (path.empty() ? "" : ":") + d;
  if (auto old = env.get_nonempty("LD_LIBRARY_PATH")) path += (path.empty() ? "" : ":") + *old;
  if (!path.empty()) child.set("LD_LIBRARY_PATH", path);

  ProcessOptions opts;
  opts.capture_output = true;
  opts.max_capture = 1 << 20;
  opts.timeout = std::chrono::seconds(60);
  // Strict: as this process's environment has it, first; the link's dirs
  // only to tell the user that they were what it needed.
  opts.environment = settings.strict ? &env : &child;
  ProcessResult run = processes.run(argv, opts);
  if (settings.strict && !run.success() && !library_dirs.empty()) {
    opts.environment = &child;
    LoadCheckResult r;
    if (processes.run(argv, opts).success()) {
      std::string why = run.out;
      while (!why.empty() && why.back() == '\n') why.pop_back();
      r.needs_library_path = true;
      r.only_with_library_path = why.empty() ? run.describe() : why;
      r.message = library + " loads only with the link's library dirs (" + path_list(library_dirs) +
                  ") on LD_LIBRARY_PATH, and --check-load=strict loads it without them: " +
                  r.only_with_library_path;
      return r;
    }
    opts.environment = &env;
  }

  LoadCheckResult r;
  r.ok = run.success();
  r.message = run.out;
  while (!r.message.empty() && r.message.back() == '\n') r.message.pop_back();
  if (!r.ok && r.message.empty())
    r.message = "the load check itself failed (" + run.describe() + ")";
  static const std::regex undefined(R"(undefined symbol: ([^\s,]+))");
  static const std::regex missing(R"(^missing symbol: (\S+))");
  std::istringstream lines(run.out);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, undefined)) r.undefined_symbols.push_back(m[1]);
    if (std::regex_search(line, m, missing)) r.missing_symbols.push_back(m[1]);
  }
  // Loaded with the link's dirs added: does it load as the process that
  // later opens it has the variable (without them)?
  if (r.ok && !library_dirs.empty() && !settings.strict) {
    opts.environment = &env;
    ProcessResult without = processes.run(argv, opts);
    if (!without.success()) {
      std::string why = without.out;
      while (!why.empty() && why.back() == '\n') why.pop_back();
      r.only_with_library_path = why.empty() ? without.describe() : why;
    }
  }
  return r;
}

}  // namespace kbuild

namespace kbuild {

int probe_library(const std::string& library, const std::vector<std::string>& symbols,
                  std::string& message) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    message = dlerror();
    return 1;
  }
  int status = 0;
  for (const std::string& s : symbols) {
    if (!dlsym(handle, s.c_str())) {
      if (!message.empty()) message += '\n';
      message.append("missing symbol: ").append(s);
      status = 1;
    }
  }
  return status;
}

}  // namespace kbuild
