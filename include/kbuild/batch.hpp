// Many builds in one call (`kbuild build-many BUILDS.json -j N`): each job
// is one kbuild build run as its own process, N at a time.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kbuild {

struct BatchJob {
  std::string name;               // for the summary (the output, or "job N")
  std::vector<std::string> args;  // kbuild build arguments
  bool positional = false;        // named "job N": neither a "name" nor -o
};

// The build list: {"common": [args...], "builds": [[args...] | {"name": s, "args": [...]}, ...]}
// `common` is prepended to every build's args. Throws Error(config) with
// file:line:column and key path when the build list is not a regular file
// (never read: a FIFO would block), is malformed, or a build would run
// build-many itself; Error(usage) when two builds name one output or one
// --report (where the file really is), when one names the build list, or
// when `common` holds a --report.
std::vector<BatchJob> load_build_list(const std::string& path);

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
// (the process module's Ctrl-C handling) is passed on to the running builds, which are waited
// for; then Error(interrupted) is thrown.
std::vector<BatchResult> run_batch(const std::vector<BatchJob>& jobs,
                                   const std::vector<std::string>& kbuild, unsigned parallel,
                                   bool fail_fast,
                                   const std::function<void(const BatchProgress&)>& progress);

// One build's line in build-many's summary (`--json`), which is also what
// `--baseline` reads back from an earlier run.
struct BatchSummaryRow {
  std::string name;
  std::string status;  // "ok", "failed" or "skipped"
  std::string stage;   // a failure's stage as error lines name it ("compile"...), else ""
  int exit_code = 0;   // -1 when skipped
  double seconds = 0;
  std::string report;  // the build's --report, "" when it has none
};
std::vector<BatchSummaryRow> summarize_batch(const std::vector<BatchJob>& jobs,
                                             const std::vector<BatchResult>& results);

// How a build moved since the baseline: the NPU test-governance playbook's
// error migration (a compile failure now failing at link means the compile
// layer's fix worked and the next layer shows).
enum class Migration {
  unchanged,    // the same result, or the same failing stage
  fixed,        // failed before, builds now
  new_failure,  // built before (or is new), fails now
  deeper,       // fails at a later stage than before
  shallower,    // fails at an earlier stage than before: a regression
  changed,      // another failure not ordered by stage (interrupted, internal, skipped)
  added,        // not in the baseline (or skipped there), builds now
  removed,      // in the baseline, not in this run
  skipped,      // not built this run (--fail-fast): not compared
};
const char* migration_name(Migration m);
// Every kind of move, in the order the summary counts them.
inline constexpr Migration kAllMigrations[] = {
    Migration::fixed,     Migration::deeper,  Migration::new_failure,
    Migration::shallower, Migration::changed, Migration::added,
    Migration::removed,   Migration::skipped, Migration::unchanged};

// The failed builds counted by stage, in the order a build goes through
// them (usage, config, provider, compile, link, load, then the others);
// stages no build failed at are left out.
std::vector<std::pair<std::string, std::size_t>> failures_by_stage(
    const std::vector<BatchSummaryRow>& rows);

struct BatchComparison {
  std::string name;
  std::string before, now;  // "ok", a stage, "skipped", or "" (absent)
  Migration migration = Migration::unchanged;
};

// Reads a baseline: the `--json` summary of an earlier build-many. Throws
// Error(usage) naming file:line:column for a file that is not one.
std::vector<BatchSummaryRow> load_batch_baseline(const std::string& path);

// Throws Error(usage) unless every build has a name of its own (a "name"
// or -o, none twice): builds are compared with a baseline by name.
void check_comparable(const std::vector<BatchJob>& jobs);

// This run against the baseline, builds matched by name: this run's order,
// then those only in the baseline.
std::vector<BatchComparison> compare_to_baseline(const std::vector<BatchSummaryRow>& now,
                                                 const std::vector<BatchSummaryRow>& before);

// New failures or builds failing at an earlier stage.
bool regressed(const std::vector<BatchComparison>& comparisons);

// The summary as JSON: {"format": 1, "builds": [...], "built", "failed",
// "skipped", "jobs"}, each build with "before" and "migration" when
// `comparisons` (one per row, in order) are given.
nlohmann::ordered_json batch_summary_json(const std::vector<BatchSummaryRow>& rows,
                                          unsigned parallel,
                                          const std::vector<BatchComparison>* comparisons);

}  // namespace kbuild
