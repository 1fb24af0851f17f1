// compilation: one build as clang's Compilation: planned once (its settings resolved, its jobs
// with their argv: the PCH job, the compile and link steps, the load check), then run, or run
// in print-only mode (a dry run): one path for both.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "build/session.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "kbuild/listener.hpp"
#include "kbuild/request.hpp"
#include "plan/compiler_call.hpp"
#include "plan/plan.hpp"
#include "run/build_runner.hpp"
#include "run/output_cache.hpp"
#include "run/pch.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

// One build, from its request to its outcome: what `--dry-run`, `explain`,
// `--report` and `--compile-commands` read and Driver::run executes. Made
// by plan_compilation (or compiler_compilation for `kbuild cc`), never
// filled in by a caller; what exists depends on how far it got.
struct Compilation {
  Compilation() = default;
  Compilation(Compilation&&) = default;
  Compilation& operator=(Compilation&&) = default;

  const Session* session = nullptr;  // null for `kbuild cc`
  BuildRequest asked;                // as asked
  // As planned: the profile chosen, the precompiled header included.
  std::optional<BuildRequest> request;

  // The run's settings, resolved once (resolve_run_settings), and the
  // caches they name: what the steps run with (its output_cache and
  // remote_cache point at those below; tests may set its processes and
  // observer).
  RunSettings settings;
  std::unique_ptr<OutputCache> cache;
  // Behind `cache`, when one is named; a dry run never connects to it.
  std::unique_ptr<RemoteCache> remote;
  // The cache's directory, kept for the PCH when --no-cache leaves `cache` without one.
  std::unique_ptr<TrustedDir> pch_root;

  // The jobs: the PCH job (--pch; once run, what it made: it holds a
  // private .gch directory until the compilation goes), then the steps of
  // the plan (compile, link, load check).
  std::optional<PchJob> pch;
  std::optional<BuildPlan> plan;
  std::vector<Step> steps;

  // What running it made.
  BuildOutcome outcome;
  std::vector<std::string> notes;  // every note said, in order
  // A compilation database that is not kbuild's to change: left as it is,
  // raised once the build is done.
  std::optional<Error> left_alone_database;
  std::optional<Error> failure;  // why planning or running it failed
  int exit_code = 0;
};

// Plans `request` in `session`: resolves its run settings, opens the cache,
// plans the PCH job and the build's steps, and says the warnings and notes
// as it goes. A failure is kept in the Compilation's `failure` (with what
// was planned before it), not thrown.
Compilation plan_compilation(Session& session, BuildRequest request, BuildListener& listener);

// A build refused before it was planned (its command line asked for what
// cannot be): what was asked, and why not, for its report.
Compilation refused_compilation(BuildRequest asked, const Error& why);

// `kbuild cc`: a one-job Compilation from a compiler's argv (its words
// unchanged), with compiler mode's settings (compiler_mode_request); a
// cache that cannot be used is a warning to `listener`. Throws Error
// (usage) for a bad setting.
Compilation compiler_compilation(const CompilerCall& call, const Environment& env,
                                 const FileSystem& files, BuildListener& listener);

// Runs `compilation`, or with its request's dry_run prints it only (checks the
// files, records the compilation database, builds and runs nothing): the
// PCH job, then the steps. Throws the planning's failure, else what running
// failed with (also kept in `failure`).
void run_compilation(Compilation& compilation, BuildListener& listener, const Environment& env);

// What a dry run prints: each PCH step, then each step of the plan, one line
// each; with `inductor_line`, Inductor's own line of a one-step plan. Throws
// Error (usage) for --inductor-line on a plan of more steps.
std::vector<std::string> dry_run_lines(const Compilation& compilation, bool inductor_line);

// `kbuild cc`: whether the compiler failed and said why on its stderr (its
// own exit code is then the command's, as without kbuild).
bool compiler_said_why(const Compilation& compilation);

}  // namespace kbuild
