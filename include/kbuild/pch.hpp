// Precompiled headers the way Inductor 2.11 makes them (--pch HEADER): the
// header is copied to <cache>/pch/<key>.h, built with `-x c++-header` and
// the kernel's own flags into <key>.h.gch, and the kernel is compiled with
// `-include <key>.h`. The key covers the header's bytes, the flags and the
// compiler; the files the header pulls in are re-validated before every
// reuse, so a stale .gch is never used.
#pragma once

#include <string>

#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/registry.hpp"

namespace kbuild {

struct PchResult {
  std::string include;  // what -include names
  bool built = false;   // false: an existing .gch was reused
};

// Builds (or reuses) the precompiled `header` for builds like `kernel`.
// Throws Error like run_build (a header that does not compile is a compile
// failure naming it).
PchResult prepare_pch(const BuildRequest& kernel, const std::string& header,
                      const Registry& registry, const ResolveContext& ctx,
                      const std::string& cache_root, const BuildSettings& settings,
                      const Environment& env);

}  // namespace kbuild
