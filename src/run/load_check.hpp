// load_check: loading the built library in a child process (dlopen), as Inductor will.
#pragma once

#include <string>
#include <vector>

#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "util/process.hpp"

// Does the built library load? It is opened in a child process (dlopen with
// RTLD_NOW, so every symbol must resolve), before it replaces the old output.
namespace kbuild {

struct LoadCheckSettings {
  bool enabled = false;
  // The program that runs probe_library() in a child process
  // (kbuild-load-check, a dynamically linked helper: kbuild itself is static).
  std::vector<std::string> loader;
  std::vector<std::string> required_symbols;
  // Loaded with the environment as it is, never with the link's dirs added:
  // needing them is a failure (--check-load=strict).
  bool strict = false;
};

struct LoadCheckResult {
  bool ok = false;
  std::string message;                         // dlerror() or the missing symbol
  std::vector<std::string> undefined_symbols;  // from "undefined symbol: X"
  std::vector<std::string> missing_symbols;    // required but absent
  // Loaded, but only with the link's library dirs added to LD_LIBRARY_PATH:
  // why it does not load without them ("" when it does, or when none were
  // added).
  std::string only_with_library_path;
  // Strict: it failed, and loads only with the link's library dirs added.
  bool needs_library_path = false;
};

// Runs the loader on `library` with `library_dirs` prepended to
// LD_LIBRARY_PATH (the dirs the link used). When that loads and dirs were
// added, loads it once more with the variable as `env` has it: a library
// with no RUNPATH for its dependencies loads in the check and fails in a
// process (Inductor's, a test's) that lacks those dirs.
LoadCheckResult check_load(const LoadCheckSettings& settings, const std::string& library,
                           const std::vector<std::string>& library_dirs, const Environment& env,
                           ProcessRunner& processes = real_processes());

// What to do about a library that loads only with `library_dirs` on
// LD_LIBRARY_PATH: the rpath flags, as a device file's ldflags take them
// (Inductor adds each entry's leading '-') and as --extra-flags does.
std::string rpath_hint(const std::vector<std::string>& library_dirs);

// What to do about symbols a built library needs and nothing it loads
// defines (`undefined_symbols`, mangled as the loader names them): the
// first one demangled, the libraries the link named (with who added each),
// the -L dirs and RUNPATHs searched, and how to find the library that
// defines it.
std::string undefined_symbol_hint(const BuildOptions& options,
                                  const std::vector<std::string>& undefined_symbols);

}  // namespace kbuild

// The child side of the load check (load_check.hpp): open a built library
// the way its users will, with the system's dynamic loader.
namespace kbuild {

// dlopen(RTLD_NOW) and dlsym each symbol. Returns 0 when all is well, else 1
// with the reason in `message` (one line per problem).
int probe_library(const std::string& library, const std::vector<std::string>& symbols,
                  std::string& message);

}  // namespace kbuild
