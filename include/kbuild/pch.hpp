// Precompiled headers the way Inductor 2.11 makes them (--pch HEADER): the
// header is copied to <cache>/pch/<key>.h, built with `-x c++-header` and
// the kernel's own flags into <key>.h.gch, and the kernel is compiled with
// `-include <key>.h`. The key covers the header's bytes, the flags and the
// compiler; the files the header pulls in are re-validated before every
// reuse, so a stale .gch is never used. Without a usable cache directory
// the .gch is built in a private directory for this build alone.
#pragma once

#include <memory>
#include <string>

#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/registry.hpp"
#include "kbuild/trusted_dir.hpp"

namespace kbuild {

struct PchResult {
  std::string include;  // what -include names
  bool built = false;   // false: an existing .gch was reused
  // What the kernel's cache key must cover: the .gch and every file it was
  // built from (a header it includes changing makes a new identity).
  std::string identity;
  // The private directory holding the .gch when there is no cache; removed
  // when the last copy of the result goes.
  std::shared_ptr<void> scratch;
};

// Builds (or reuses) the precompiled `header` for builds like `kernel`, in
// `cache`'s pch/ directory (null: a private one). Throws Error like
// run_build (a header that does not compile is a compile failure naming it).
PchResult prepare_pch(const BuildRequest& kernel, const std::string& header,
                      const Registry& registry, const ResolveContext& ctx, const TrustedDir* cache,
                      const BuildSettings& settings, const Environment& env);

}  // namespace kbuild
