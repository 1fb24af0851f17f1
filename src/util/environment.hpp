// environment: the parts only the library uses (the API: kbuild/environment.hpp).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kbuild/environment.hpp"

// Where kbuild finds what was installed with it: its data directory (the
// shipped device files) and the --check-load helper, both relative to the
// running binary, so a build tree and an installation each use their own.
namespace kbuild {

// $KBUILD_DATA_DIR, else <prefix>/share/kbuild beside the binary, else the
// source tree's configs/ folder (a build tree), else the configured install dir.
std::string data_dir(const Environment& env);

// The running kbuild binary as a command line can name it again (the
// kbuild_argv[0] of a report): the file /proc/self/exe links to, while that
// path still is this binary; /proc/self/exe when it was replaced or removed.
std::string kbuild_program();

// The `kbuild` program installed with this library (<prefix>/bin/kbuild):
// what build-many runs when the Driver's options name none.
std::string installed_kbuild();

// A helper program of kbuild's (kbuild-load-check, the remote cache's
// kbuild-http): beside kbuild (the build tree), else in the libexec dir of
// the installation kbuild belongs to; nullopt when it is in neither.
std::optional<std::string> helper_program(const std::string& name);

// kbuild-load-check: beside kbuild (the build tree), else in the libexec
// dir of the installation kbuild belongs to. Throws Error (internal).
std::string load_check_helper();

// The observer library (libkbuild-observer.so, src/observer) found as
// kbuild-load-check is; "" when it is missing or its path cannot go into
// LD_PRELOAD (which splits at blanks and colons).
std::string observer_library();

}  // namespace kbuild

// How long something took, for the timings a report and -v show.
namespace kbuild {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kbuild
