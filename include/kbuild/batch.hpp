// Many builds in one call (`kbuild build-many MANIFEST.json -j N`): each job
// is one kbuild build run as its own process, N at a time.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kbuild {

struct BatchJob {
  std::string name;               // for the summary (the output, or "job N")
  std::vector<std::string> args;  // kbuild build arguments
};

// The manifest: {"common": [args...], "builds": [[args...] | {"name": s, "args": [...]}, ...]}
// `common` is prepended to every build's args. Throws Error(config) with
// file:line:column and key path when the manifest is not a regular file
// (never read: a FIFO would block), is malformed, or a build would run
// build-many itself; Error(usage) when two builds name one output or one
// --report (where the file really is), when one names the manifest, or
// when `common` holds a --report.
std::vector<BatchJob> load_batch_manifest(const std::string& path);

struct BatchResult {
  std::string name;
  int exit_code = -1;
  double seconds = 0;
  std::string output;  // the job's stderr and stdout, for failures
  bool started = false;
};

struct BatchProgress {
  std::size_t done = 0, failed = 0, total = 0;
  double elapsed = 0;
};

// Runs `jobs` with at most `parallel` at a time through `kbuild` (argv
// prefix, e.g. {kbuild_program()}: the path each build's report records).
// With `fail_fast`, nothing new starts after a failure. `progress` is
// called after each job (from one thread at a time). An interrupt
// (interrupts.hpp) is passed on to the running builds, which are waited
// for; then Error(interrupted) is thrown.
std::vector<BatchResult> run_batch(const std::vector<BatchJob>& jobs,
                                   const std::vector<std::string>& kbuild, unsigned parallel,
                                   bool fail_fast,
                                   const std::function<void(const BatchProgress&)>& progress);

}  // namespace kbuild
