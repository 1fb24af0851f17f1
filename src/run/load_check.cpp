
#include "run/load_check.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <chrono>
#include <cstdlib>
#include <memory>
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

// "_Z10acc_launchi" -> "acc_launch(int)"; a C name as it is.
std::string demangled(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && name ? std::string(name.get()) : symbol;
}

// The RUNPATH dirs an ldflags or passthrough entry gives ("Wl,-rpath,/a:/b").
void add_rpaths(const std::string& entry, std::vector<std::string>& out) {
  for (const char* flag : {"-rpath,", "-rpath="}) {
    const std::size_t at = entry.find(flag);
    if (at == std::string::npos) continue;
    std::string dirs = entry.substr(at + std::string(flag).size());
    dirs = dirs.substr(0, dirs.find_first_of(", "));
    for (std::size_t start = 0; start <= dirs.size();) {
      const std::size_t end = std::min(dirs.find(':', start), dirs.size());
      if (end > start) out.push_back(dirs.substr(start, end - start));
      start = end + 1;
    }
  }
}

}  // namespace

std::string undefined_symbol_hint(const BuildOptions& options,
                                  const std::vector<std::string>& undefined_symbols) {
  if (undefined_symbols.empty()) return "";
  const std::string symbol = demangled(undefined_symbols.front());
  std::string libraries;
  for (const Entry& e : options.entries(OptionList::libraries))
    libraries +=
        (libraries.empty() ? "" : "; ") + ("-l" + e.value) + ", added by " + e.origin.describe();
  std::vector<std::string> rpaths;
  for (OptionList list : {OptionList::ldflags, OptionList::passthrough_args})
    for (const std::string& value : options.values(list)) add_rpaths(value, rpaths);
  std::string searched;
  for (const std::string& d : options.values(OptionList::libraries_dirs))
    searched += (searched.empty() ? "-L " : ", ") + d;
  for (std::size_t i = 0; i < rpaths.size(); ++i)
    searched += (searched.empty() ? "" : ", ") + std::string(i ? "" : "RUNPATH ") + rpaths[i];
  const std::string more =
      undefined_symbols.size() > 1
          ? " (and " + std::to_string(undefined_symbols.size() - 1) + " more undefined)"
          : "";
  return symbol + more + " is defined by none of the libraries the link named (" +
         (libraries.empty() ? std::string("none") : libraries) + "); searched " +
         (searched.empty() ? std::string("") : searched + " and ") +
         "the system's dirs: add the library that defines it to the device file's "
         "\"libraries\" (or --extra-flags -lNAME), or check that the headers match the "
         "library's version (nm -D --defined-only LIB | grep '" +
         undefined_symbols.front() + "' tells which library has it)";
}

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

  ProcessRequest opts;
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
