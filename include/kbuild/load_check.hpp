// Does the built library load? It is opened in a child process (dlopen with
// RTLD_NOW, so every symbol must resolve), before it replaces the old output.
#pragma once

#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/process_runner.hpp"

namespace kbuild {

struct LoadCheckSettings {
  bool enabled = false;
  // The program that runs probe_library() in a child process
  // (kbuild-load-check, a dynamically linked helper: kbuild itself is static).
  std::vector<std::string> loader;
  std::vector<std::string> required_symbols;
};

struct LoadCheckResult {
  bool ok = false;
  std::string message;                         // dlerror() or the missing symbol
  std::vector<std::string> undefined_symbols;  // from "undefined symbol: X"
  std::vector<std::string> missing_symbols;    // required but absent
};

// Runs the loader on `library` with `library_dirs` prepended to
// LD_LIBRARY_PATH (the dirs the link used).
LoadCheckResult check_load(const LoadCheckSettings& settings, const std::string& library,
                           const std::vector<std::string>& library_dirs, const Environment& env,
                           ProcessRunner& processes = real_processes());

}  // namespace kbuild
