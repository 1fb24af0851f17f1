// driver: the Driver: one per process, a method per command; every command and kbuild cc enter
// here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/batch.hpp"
#include "kbuild/build_context.hpp"
#include "kbuild/compiler_call.hpp"
#include "kbuild/digest.hpp"
#include "kbuild/doctor.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "kbuild/explain.hpp"
#include "kbuild/isa_answer.hpp"
#include "kbuild/plugin.hpp"

// A whole build as a command line asks for it, in order: every setting made
// first, the PCH planned (and built, unless a dry run), the build planned
// into steps, the compilation database written, the steps run (unless a dry
// run). The CLI parses into a BuildJob, calls drive_build, and prints.
namespace kbuild {

// What a build says as it goes, for the caller to show (the library prints
// nothing). Called in order, before the compiler runs where it can be.
class BuildListener {
 public:
  virtual ~BuildListener() = default;
  virtual void warnings(const std::vector<std::string>& lines) = 0;
  virtual void notes(const std::vector<std::string>& lines) = 0;
  // Every note of the plan at once, when the plan is made (the caller may
  // fold them); the other notes come through notes().
  virtual void plan_notes(const std::vector<std::string>& lines) = 0;
  virtual void info(const std::string& line) = 0;
  // A device one typo from a registered one (unknown_device_warning): said
  // as a warning; the plan's note about it would only repeat it.
  virtual void unknown_device(const std::string& /*device*/, const std::string& warning) {
    warnings({warning});
  }
};

// One build's request and settings, as parsed.
struct BuildJob {
  BuildRequest request;
  RunOptions run;
  std::string pch;           // --pch HEADER ("": none)
  std::string remote_cache;  // --remote-cache ("": KBUILD_REMOTE_CACHE, the device file's)
  bool remote_cache_readonly = false;
  std::string compile_commands;  // --compile-commands FILE ("": none)
  bool verbose = false;          // -v: say where the remote cache setting came from
};

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

}  // namespace kbuild

// The one way into kbuild: a Driver per process (its environment, where the
// device files are, the site, the registry, the cache settings), with a
// method per command. A build is a Compilation: planned (what --dry-run and
// `explain` print) and, unless a dry run, run. The CLI and `kbuild cc` parse,
// call a Driver method and print what it returns; so does an embedding
// program (examples/embed/). clang's Driver::BuildCompilation is the model.
namespace kbuild {

// `kbuild options`: a device's 7 lists as this process resolves them.
struct DeviceOptionsAnswer {
  OptionsResult device;
  std::vector<std::string> notes;  // the site's, the plugins', the device's
};

// `kbuild build-many`: every build's result, summarised, and compared with
// the baseline when one was given.
struct BatchRun {
  std::vector<BatchResult> results;
  std::vector<BatchSummaryRow> rows;
  std::optional<std::vector<BatchComparison>> comparisons;
  unsigned parallel = 1;
};

struct BatchRequest {
  std::string manifest;
  unsigned jobs = 0;  // 0: one per CPU
  bool fail_fast = false;
  std::string baseline;  // "": no comparison
  bool fail_on_regressions = false;
  std::function<void(const BatchProgress&)> progress;
};

// `kbuild cc`: how a compiler command ended (the compiler's own exit code
// when it failed, as without kbuild).
struct CompilerRun {
  int exit_code = 0;
  BuildOutcome outcome;          // what ran, the cache's answer, timings
  std::optional<Error> failure;  // why it failed
  // The compiler failed and said why on its stderr: exit_code is its own.
  bool compiler_said_why = false;
};

class Driver {
 public:
  Driver(SessionOptions options, const Environment& env);
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Device files, site and registry, loaded on first use (`cache`, `isa`
  // and `kbuild cc` need none). Throws Error (usage, config).
  Session& session();

  // `kbuild options`. Throws Error.
  DeviceOptionsAnswer options(const DeviceQuery& query, const std::vector<std::string>& plugins,
                              bool strict);
  // `kbuild devices`.
  std::vector<DeviceListing> devices();
  // `kbuild explain`: the plan and where each flag came from; runs nothing.
  Explanation explain(BuildRequest request, const RunOptions& options);
  // A build: planned into `compilation` and, unless job.run.dry_run, run
  // (what it says goes to `listener`). Throws Error; `compilation` holds
  // what was made before.
  void build(const BuildJob& job, BuildListener& listener, Compilation& compilation);
  // `kbuild doctor`: every check, the worst deciding the exit code.
  std::vector<DoctorCheck> doctor(const BuildRequest& request);
  // `kbuild isa`.
  IsaAnswer isa(const std::string& compiler, const std::string& remote_cache, bool readonly);
  // `kbuild cache stats|clear|keygen`.
  CacheSummary cache_stats(const std::string& max_size);
  // The directory cleared, and whether there was one. Throws Error (usage).
  std::pair<std::string, bool> clear_cache();
  SigningKeys cache_keygen();
  // `kbuild build-many`. Throws Error for a bad manifest or baseline, before
  // anything runs.
  BatchRun build_many(const BatchRequest& request);
  // `kbuild cc`: a compiler command kbuild treats as a build (through the
  // output cache, the remote one and KBUILD_LAUNCHER), its words unchanged.
  CompilerRun compile(const CompilerCall& call, BuildListener& listener);

  const Environment& env() const { return env_; }

 private:
  SessionOptions options_;
  const Environment& env_;
  std::optional<Session> session_;
};

// What a build whose library loads only with its library dirs on
// LD_LIBRARY_PATH says about it (--check-load found so).
std::string only_with_library_path_note(const BuildPlan& plan, const LoadCheckResult& load);

}  // namespace kbuild
