// driver: what the CLI needs of the driver besides its public API: the types
// the public header only names, and the build's steps as functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnose/build_context.hpp"
#include "diagnose/explain.hpp"
#include "kbuild/driver.hpp"
#include "plan/compiler_call.hpp"
#include "plan/plan.hpp"
#include "run/build_runner.hpp"
#include "run/load_check.hpp"

// A whole build as a command line asks for it, in order: every setting made
// first, the PCH planned (and built, unless a dry run), the build planned
// into steps, the compilation database written, the steps run (unless a dry
// run).
namespace kbuild {

// Plans and (unless job.run.dry_run) runs `job`, filling `record` as far as
// it gets: request, PCH lines, plan, steps, outcome, notes. Throws Error. A
// compilation database that is not kbuild's to change does not stop the
// build: its error is left in `record.left_alone_database`, for the caller
// to raise once the build is done.
void drive_build(Session& session, const BuildJob& job, const Environment& env,
                 BuildListener& listener, Compilation& record);

// What a dry run prints: each PCH step, then each step of the plan, one line
// each; with `inductor_line`, Inductor's own line of a one-step plan. Throws
// Error (usage) for --inductor-line on a plan of more steps.
std::vector<std::string> dry_run_lines(const Compilation& record, bool inductor_line);

// A device no one registered that is one typo from one that is: the warning
// naming it (upstream's empty device options still apply), or nothing.
// Throws Error (usage) instead with `strict`.
std::optional<std::string> unknown_device_warning(const Session& session, const std::string& device,
                                                  bool strict);

// `kbuild cc`: how a compiler command ended (the compiler's own exit code
// when it failed, as without kbuild).
struct CompilerRun {
  int exit_code = 0;
  BuildOutcome outcome;          // what ran, the cache's answer, timings
  std::optional<Error> failure;  // why it failed
  // The compiler failed and said why on its stderr: exit_code is its own.
  bool compiler_said_why = false;
};

// What a build whose library loads only with its library dirs on
// LD_LIBRARY_PATH says about it (--check-load found so).
std::string only_with_library_path_note(const BuildPlan& plan, const LoadCheckResult& load);

}  // namespace kbuild
