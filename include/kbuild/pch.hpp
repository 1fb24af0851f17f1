// Precompiled headers the way Inductor 2.11 makes them (--pch HEADER): the
// header is copied to <cache>/pch/<key>.h, built with `-x c++-header` and
// the kernel's own flags into <key>.h.gch (through the launcher, under the
// same --timeout), and the kernel is compiled with `-include <key>.h`. The
// key covers the header's bytes, the flags and the compiler; the files the
// header pulls in are re-validated before every reuse, so a stale .gch is
// never used. Without a usable cache directory the .gch is built in a
// private directory for this build alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/build_steps.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/registry.hpp"
#include "kbuild/trusted_dir.hpp"

namespace kbuild {

// What --pch will do, decided before anything runs.
struct PchPlan {
  std::string header;    // as given
  std::string key;       // of the header build
  std::string dir;       // the cache's pch/ ("": a private directory, made when run)
  std::string include;   // what -include names
  bool reuse = false;    // an existing .gch whose inputs are unchanged
  std::string identity;  // when reused: what the kernel's key covers
  BuildPlan build;       // the header build (when not reused)
  std::vector<Step> steps;
};

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

// Plans the precompiled `header` for builds like `kernel`, in the pch/
// directory of the cache at `cache_dir` ("": a private one), reading what is
// there already through `cache` (null when it does not exist yet). Reads,
// never writes. Throws Error.
PchPlan plan_pch(const BuildRequest& kernel, const std::string& header, const Registry& registry,
                 const ResolveContext& ctx, const std::string& cache_dir, const TrustedDir* cache,
                 const Launcher& launcher, const Environment& env);

// The plan's steps as --dry-run prints them (the copy, the header build or
// its reuse).
std::vector<std::string> pch_lines(const PchPlan& plan);

// What a PCH dir records of a .gch ("gch" in its .deps) and checks before
// reusing it, locally and from the remote cache: size, mtime and inode.
std::string gch_stamp(const TrustedDir& dir, const std::string& name);

// Builds (or reuses) it. Throws Error like run_build (a header that does not
// compile is a compile failure naming it).
PchResult run_pch(const PchPlan& plan, const TrustedDir* cache, const BuildSettings& settings,
                  const Registry& registry, const ResolveContext& ctx, const BuildRequest& kernel,
                  const Environment& env);

}  // namespace kbuild
