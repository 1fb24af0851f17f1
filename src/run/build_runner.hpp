// build_runner: running the steps: cache lookup, the compiler, the output's install, and why a
// build failed.
#pragma once

#include <sys/stat.h>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"
#include "run/load_check.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "util/process.hpp"

// Why a compiler run failed, read off what it printed: a compile error
// (a diagnostic with file:line) or a link error (a library not found, an
// undefined reference), so the report names the earliest failing stage.
namespace kbuild {

enum class FailedStep { compile, link };

struct FailureAnalysis {
  FailedStep step = FailedStep::compile;
  std::vector<std::string> missing_libraries;  // from "cannot find -lNAME"
  std::vector<std::string> undefined_symbols;  // from "undefined reference to `X'"
  std::vector<std::string> missing_headers;    // from "fatal error: X: No such file ..."
  std::string first_error;                     // the first error line, for the summary
};

// `output` is the compiler's stdout+stderr; `links` whether the command links.
FailureAnalysis analyze_failure(const std::string& output, bool links);

}  // namespace kbuild

// Runs planned build steps (plan_steps, plan/plan.hpp): nothing is decided here. The
// compiler writes into a private work directory beside the output
// (util/trusted_dir.hpp); the result is renamed into place only when every step
// succeeded and wrote a well-formed output (and, with a load check, only
// once it loads), so the output appears whole or not at all and a failed
// build leaves the previous one untouched. With a cache, a hit replaces the
// steps, and a miss is stored with what the compiler read.
namespace kbuild {

struct StageTiming {
  std::string stage;  // "compile", "load"
  double seconds = 0;
};

enum class CacheStatus { off, hit, miss, uncacheable };
const char* cache_status_name(CacheStatus status);

// What happened, filled in as the build goes (also when it fails).
struct BuildOutcome {
  std::optional<ProcessResult> process;         // the (last) compiler run, output captured
  std::vector<std::vector<std::string>> steps;  // what ran, as it ran
  std::optional<FailureAnalysis> failure;
  std::optional<LoadCheckResult> load;
  CacheStatus cache = CacheStatus::off;
  std::string cache_detail;  // why a miss was not stored
  // On a miss: the input of an entry found that differs now (nullopt: no
  // entry was known); uncacheable: why it was not stored, by kind.
  std::optional<StaleInput> stale;
  std::optional<Uncacheable> uncacheable;
  std::vector<StageTiming> timings;
  // On a miss of observed steps: the manifest of what they were seen to do
  // (input_manifest.hpp: observed_manifest), or why there is none.
  std::optional<Result<std::string>> observed_manifest;
  std::string entry_manifest;  // on a hit: the entry's manifest (what it read)
  // What the compiler printed: on a miss as it ran (every step), on a hit
  // as the entry replayed it.
  CompilerOutput printed;
  std::optional<std::string> shared_key;  // with report_shared_key and a remote cache
  // With a remote cache: its address as shown, and why builders that miss
  // one key do not take turns ("" when they do: leases).
  std::optional<std::string> remote_cache;
  std::string remote_lease_note;
  struct timespec started {};  // file-system time the build started
};

// What a build refuses before it runs anything, and a dry run too: a
// source missing, unreadable or not a regular file (Error input), an output
// that is also a source (usage), an output directory missing or not a
// directory, an output that is a directory or not a regular file (output).
void check_build_files(const std::vector<std::string>& sources, const std::string& output);

// Throws Error: input (source missing or not a file), output (directory
// missing or unwritable), compiler_missing, compile_failed, link_failed,
// load_failed, interrupted. The compiler's output passes through as it runs.
void run_build(const BuildPlan& plan, const std::vector<Step>& steps,
               const std::vector<std::string>& sources, const RunSettings& settings,
               const Environment& env, BuildOutcome& outcome);

// ok() when the file open as `fd` is a whole output of `kind` (an ELF object
// or library whose section headers fit in the file, a precompiled header),
// else why it is not.
Status check_output_format(int fd, OutputKind kind);

}  // namespace kbuild

// The one-line error for a failed compiler step, from its analysis: a
// missing library names the provider and device file that added it and the
// dirs searched; an undefined reference says a library is missing; a
// compile error quotes the first diagnostic.
namespace kbuild {

// The end of a failure's line: "; OUT left as it was" when an earlier
// output exists, "; no OUT written" when none did (nothing was kept).
std::string untouched_output(const std::string& output);

// `options` are the build's (for provenance), `output` the path kept as it was.
Error toolchain_error(const BuildOptions& options, const std::string& output,
                      const ProcessResult& process, const FailureAnalysis& analysis);

}  // namespace kbuild
