// Runs a planned build: the compiler writes a temporary file beside the
// output, which is renamed into place only on success (and, with a load
// check, only once it loads), so the output appears whole or not at all and
// a failed build leaves the previous one untouched.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/build_plan.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/failure_analysis.hpp"
#include "kbuild/load_check.hpp"
#include "kbuild/output_cache.hpp"
#include "kbuild/process.hpp"

namespace kbuild {

struct BuildSettings {
  LoadCheckSettings load_check;
  OutputCache* cache = nullptr;  // null or disabled: always compile
};

struct StageTiming {
  std::string stage;  // "compile", "load"
  double seconds = 0;
};

// What happened, filled in as the build goes (also when it fails).
struct BuildOutcome {
  std::optional<ProcessResult> process;  // the compiler run, output captured
  std::optional<FailureAnalysis> failure;
  std::optional<LoadCheckResult> load;
  std::string cache = "off";  // "off", "hit", "miss", "uncacheable"
  std::vector<StageTiming> timings;
};

// Throws Error: input (source missing or not a file), output (directory
// missing or unwritable), compiler_missing, compile_failed, link_failed,
// load_failed, interrupted. The compiler's output passes through as it runs.
void run_build(const BuildPlan& plan, const std::vector<std::string>& sources,
               const BuildSettings& settings, const Environment& env, BuildOutcome& outcome);

// The temporary name used for `output` (same directory, hidden, unique).
std::string temporary_output_path(const std::string& output);

}  // namespace kbuild
