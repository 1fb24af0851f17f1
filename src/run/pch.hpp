// Precompiled headers the way Inductor 2.11 makes them (--pch HEADER): the
// header is copied to <cache>/pch/<key>.h, built with `-x c++-header` and
// the kernel's own flags into <key>.h.gch (through the launcher, under the
// same --timeout), and the kernel is compiled with `-include <key>.h`. The
// header build is a build like any other: run_build looks it up in, and
// stores it to, the build's storage stack (local, remote, read-only,
// leases, counters) under the one key module's keys, so another machine's
// .gch arrives as a hit. The .gch then stays in pch/ (g++ reads it beside
// the header), with the entry's manifest of what it was built from; those
// files are re-validated before every reuse, so a stale .gch is never
// used. Without a usable cache directory the .gch is built in a private
// directory for this build alone.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/registry.hpp"
#include "kbuild/environment.hpp"
#include "plan/plan.hpp"
#include "run/build_runner.hpp"
#include "run/cache_key.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

// The --pch job: decided before anything runs (plan_pch), then carrying
// what running it made (run_pch).
struct PchJob {
  std::string header;   // as given
  std::string key;      // of the header build
  std::string dir;      // the cache's pch/ ("": a private directory, made when run)
  std::string include;  // what -include names (once run: also a private directory's)
  bool reuse = false;   // an existing .gch whose inputs are unchanged
  // What the kernel's cache key must cover: the .gch and every file it was
  // built from (a header it includes changing makes a new identity); when
  // planned, only for a reuse.
  std::string identity;
  // With a remote cache: what the kernels' shared keys name instead of this
  // machine's .gch (the header build's shared key, the files it read by
  // path and content, the header's place as a placeholder); when planned,
  // only for a reuse whose header build's shared key is recorded.
  std::optional<ShareableParts> kernel_parts;
  BuildPlan build;  // the header build (when not reused)
  std::vector<Step> steps;

  // What running it made.
  bool built = false;   // false: an existing .gch was reused, or a cache hit
  bool hit = false;     // the header build was a cache hit...
  bool remote = false;  // ...from the remote cache
  // The private directory holding the .gch when there is no cache; removed
  // when the last copy of the job goes.
  std::shared_ptr<void> scratch;
};

// Plans the precompiled `header` for builds like `kernel`, in the pch/
// directory of the cache at `cache_dir` ("": a private one), reading what is
// there already through `cache` (null when it does not exist yet). With
// `shared` (a remote cache), a .gch whose .deps names no shared key (built
// without one) is not reused but built again through the storage, a local
// hit as a rule, so that its kernels share. Reads, never writes. Throws
// Error. The header and the .gch's inputs are stated and read in `files`.
PchJob plan_pch(const BuildRequest& kernel, const std::string& header, const Registry& registry,
                const ResolveContext& ctx, const std::string& cache_dir, const TrustedDir* cache,
                const Launcher& launcher, const Environment& env, bool shared = false,
                const FileSystem& files = system_file_system());

// The plan's steps as --dry-run prints them (the copy, the header build or
// its reuse).
std::vector<std::string> pch_lines(const PchJob& plan);

// What a PCH dir records of a .gch ("gch" in its .deps) and checks before
// reusing it, locally and from the remote cache: size, mtime and inode.
std::string gch_stamp(const TrustedDir& dir, const std::string& name);

// Builds (or reuses) it, through the storage `settings` name (a hit runs no
// compiler): the job, with what running it made. Throws Error like
// run_build (a header that does not compile is a compile failure naming it).
PchJob run_pch(PchJob job, const TrustedDir* cache, const RunSettings& settings,
               const Registry& registry, const ResolveContext& ctx, const BuildRequest& kernel,
               const Environment& env);

}  // namespace kbuild
