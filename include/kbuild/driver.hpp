// driver: the Driver: one per process, a method per command; every command and kbuild cc enter
// here. The public API: this header and what it includes (request, answers, batch, the 7
// lists, errors, the environment); the types it only names are the library's own
// (src/driver/driver.hpp and the headers beside their sources).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbuild/answers.hpp"
#include "kbuild/batch.hpp"
#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "kbuild/listener.hpp"
#include "kbuild/request.hpp"

// The one way into kbuild: a Driver per process (its environment, where the
// device files are, the site, the registry, the cache settings), with a
// method per command. A build is a Compilation that owns its jobs: planned
// (plan: what `explain`, --dry-run and --report read), then run (run: a
// dry run is the same run, printing only). The CLI and `kbuild cc` parse,
// call a Driver method and print what it returns; so does an embedding
// program (examples/embed/). clang's Driver::BuildCompilation is the model.
namespace kbuild {

class Session;       // device files, site, registry, profile
struct Compilation;  // one build: its settings, its jobs, its outcome
struct Explanation;  // `kbuild explain`'s plan with each flag's origin
struct CompilerCall;

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
  std::vector<std::string> notes;  // e.g. a missing baseline read as empty
};

// What a build made, for a program embedding kbuild (the CLI reads the
// whole Compilation through the internal headers).
struct BuiltKernel {
  std::string output;              // the file written (-o, else beside the first source)
  std::vector<std::string> steps;  // the plan's lines, as Driver::dry_run gives them
  std::string cache;               // "hit", "miss", "uncacheable" or "off"
  std::vector<std::string> notes;  // every note the build said, in order
};

struct BatchRequest {
  std::string build_list;  // BUILDS.json: the builds to run
  unsigned jobs = 0;       // 0: one per CPU
  bool fail_fast = false;
  std::string baseline;  // "": no comparison
  // A baseline file that does not exist is an empty baseline (the first
  // night), with a note; else it is an error.
  bool baseline_missing_empty = false;
  bool fail_on_regressions = false;
  std::function<void(const BatchProgress&)> progress;
};

class Driver {
 public:
  Driver(SessionRequest options, const Environment& env);
  ~Driver();
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
  Explanation explain(BuildRequest request);
  // A build planned: its run settings resolved, its jobs (the PCH job, the
  // compile and link steps with their argv, the load check) made. What it
  // says goes to `listener`. A failure is kept in the Compilation (with what
  // was planned before it) and thrown by run().
  Compilation plan(BuildRequest request, BuildListener& listener);
  // Runs a planned build, or with request.dry_run prints it only (builds
  // nothing; the lines are dry_run_lines'). Throws Error; the Compilation
  // keeps it and what was made before.
  void run(Compilation& compilation, BuildListener& listener);
  // The evidence report (--report, docs/report.md) of a planned or run
  // Compilation, as JSON text; asks its compiler for `--version`.
  std::string report(const Compilation& compilation, const std::vector<std::string>& kbuild_argv);
  // `kbuild --dry-run`: plans `request` (compiling and writing nothing) and
  // gives the lines it prints: each PCH step, then each step of the plan;
  // with `inductor_line`, Inductor's own line of a one-step plan. Throws
  // Error.
  std::vector<std::string> dry_run(BuildRequest request, BuildListener& listener,
                                   bool inductor_line = false);
  // A build planned and run, for a program embedding kbuild: what it wrote
  // and how (request.dry_run is ignored: dry_run() plans only). Throws
  // Error, as the command line's build fails.
  BuiltKernel build(BuildRequest request, BuildListener& listener);
  // `kbuild doctor`: every check, the worst deciding the exit code.
  std::vector<DoctorCheck> doctor(const BuildRequest& request);
  // `kbuild isa`.
  IsaAnswer isa(const std::string& compiler, const std::string& remote_cache, bool readonly);
  // `kbuild cache stats|clear|keygen|check`.
  CacheSummary cache_stats(const std::string& max_size);
  // The directory cleared, and whether there was one. Throws Error (usage).
  std::pair<std::string, bool> clear_cache();
  SigningKeys cache_keygen();
  // The remote cache settings (`address`, else KBUILD_REMOTE_CACHE, and
  // their variables) checked as compiler mode checks them, without
  // connecting. Throws Error (usage) where a routed compile would.
  RemoteCacheCheck check_remote_cache(const std::string& address);
  // `kbuild build-many`. Throws Error for a bad build list or baseline, before
  // anything runs.
  BatchRun build_many(const BatchRequest& request) const;
  // `kbuild cc`: a compiler command kbuild treats as a build (through the
  // output cache, the remote one and KBUILD_LAUNCHER), its words unchanged:
  // a one-job Compilation, run; its `failure` says why it failed. Throws
  // Error (usage) for a bad setting.
  Compilation compile(const CompilerCall& call, BuildListener& listener);

  const Environment& env() const { return env_; }

 private:
  SessionRequest options_;
  const Environment& env_;
  std::unique_ptr<Session> session_;
};

}  // namespace kbuild
