// Runs a planned build: the compiler writes a temporary file beside the
// output, which is renamed into place only on success, so the output appears
// whole or not at all and a failed build leaves the previous one untouched.
#pragma once

#include <optional>
#include <string>

#include "kbuild/build_plan.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/process.hpp"

namespace kbuild {

struct BuildOutcome {
  ProcessResult process;
  double seconds = 0;
};

// Throws Error: input (source missing or not a file), output (directory
// missing or unwritable), compiler_missing, toolchain_failed, interrupted.
BuildOutcome run_build(const BuildPlan& plan, const std::vector<std::string>& sources,
                       const Environment& env);

// The temporary name used for `output` (same directory, hidden, unique).
std::string temporary_output_path(const std::string& output);

}  // namespace kbuild
