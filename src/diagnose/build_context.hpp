// build_context: what a build saw (device, profile, site, cache), for reports and cache stats.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "devices/device_file_load.hpp"
#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "kbuild/request.hpp"
#include "plan/plan.hpp"
#include "run/build_runner.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "site/site.hpp"
#include "util/trusted_dir.hpp"

// One run's context, built once before anything runs: where kbuild's device
// files are, the site (torch, Python, CUDA), the registry, the cache
// settings, and what a build collected for its report. The CLI only parses
// its command line into these, calls, and prints.
namespace kbuild {

// Paths, device registry and timings of one run.
class Session {
 public:
  // Throws Error (usage, config) for a bad site setting or device file.
  Session(const SessionOptions& options, const Environment& env);

  ResolveContext context() const { return ResolveContext{site.paths, env, profile.profile.get()}; }
  // What loading said (missing config dirs, duplicate devices), to print.
  std::vector<std::string> warnings() const;
  // The registry's listing of `device` (nullopt: unknown).
  std::optional<DeviceListing> listing(const std::string& device) const;
  // The backend a build of `query` resolves: the one asked for, else the
  // device file's default ("" when the device has none).
  std::string backend_of(const DeviceQuery& query) const;
  // For a device no one registered: the registered one it is one typo
  // from ("npuu" -> npu), if any.
  std::optional<std::string> device_suggestion(const std::string& device) const;

  const Environment& env;
  Site site;
  ProfileChoice profile;  // the Inductor profile of the torch found or named
  Registry registry;
  LoadedDeviceFiles device_files;
  std::vector<StageTiming> timings;
};

// What a listed device is, in a few words: the built-ins' own, else its
// device file's "description" ("" when it has none).
std::string device_description(const DeviceListing& device);

// Why --report must not be written at `report`: it is a source or the
// output (it would be overwritten), or not a regular file.
std::optional<Error> report_path_problem(const std::string& report,
                                         const std::vector<std::string>& sources,
                                         const std::string& output);

// Every setting of one build, made once (resolve_run_settings), before
// anything (the PCH step included) runs: the cache, the remote cache, the
// launcher, the timeout, the load check.
class BuildContext {
 public:
  // `request.registry` is the session's when null. Throws Error (usage: a bad
  // cache size or remote cache setting; internal: no load-check helper).
  BuildContext(const Session& session, const RunSettingsRequest& request);
  BuildContext(const BuildContext&) = delete;
  BuildContext& operator=(const BuildContext&) = delete;

  // Where --pch keeps its header and .gch: the cache (also with --no-cache,
  // which turns off only the output cache), or nowhere (this build only).
  struct PchPlace {
    const TrustedDir* root = nullptr;  // null: this build only
    std::string dir;                   // what the plan names (a dry run's future cache)
    std::string warning;               // why the cache cannot hold it ("" when it can)
  };
  PchPlace pch_place();

  // What planning the steps needs, for `plan`.
  StepInput step_input(const BuildPlan& plan, const std::vector<std::string>& sources) const;

  RunSettings run;
  OutputCache cache;
  // Behind `cache`, when one is named; a dry run never connects to it.
  std::optional<RemoteCache> remote;
  BuildSettings settings;  // settings.cache and settings.remote point at those above
  // Why the cache is off, when it is: a warning, or a note.
  std::vector<std::string> warnings, notes;

 private:
  const Environment& env_;
  RunOptions options_;
  std::optional<TrustedDir> own_pch_root_;
};

// One build, from the command line to its outcome (clang's Compilation):
// what `--dry-run` and `explain` print and `Driver::build` runs; what
// exists depends on how far it got.
struct Compilation {
  std::vector<std::string> kbuild_argv;
  std::string device;                // as asked, also when the request was not made
  std::vector<std::string> plugins;  // --plugin, as asked
  std::string backend;               // --backend, as asked
  std::string compiler;              // as asked (--cxx, CXX, g++)
  const Session* session = nullptr;
  std::optional<BuildRequest> request;
  std::optional<BuildPlan> plan;
  std::vector<Step> steps;
  std::vector<std::string> pch_lines;  // the PCH steps, before `steps`
  BuildOutcome outcome;
  std::vector<std::string> notes;  // every note said, in order
  // A compilation database that is not kbuild's to change: left as it is,
  // raised once the build is done.
  std::optional<Error> left_alone_database;
  std::optional<Error> failure;
  int exit_code = 0;
  // Tests: the process runner the steps run through (null: real
  // processes), and the observer preloaded into observed steps ("": the
  // installed one).
  ProcessRunner* processes = nullptr;
  std::string observer;
};

// The evidence report (--report) of `record`; asks the compiler its version.
nlohmann::ordered_json report_of(const Compilation& record, const Environment& env);

}  // namespace kbuild

// `kbuild cache stats`: the output cache's directory, entries, size and
// limit, its hits and misses, and the remote cache's counters (kept in the
// same directory), as text or JSON with stable keys (docs/cache.md).
namespace kbuild {

// Reads the cache named by the environment; the limit is `max_size`
// (--cache-max-size), else KBUILD_CACHE_MAX_SIZE, else 4G. Creates nothing.
// Throws Error(usage) when no directory can be named, the limit is not a
// size, or the directory is not safe to use.
CacheSummary cache_summary(const Environment& env, const std::string& max_size);

// One line per fact, as `kbuild cache stats` prints them.
std::vector<std::string> cache_summary_lines(const CacheSummary& summary);

// {"directory", "exists", "entries", "bytes", "max_bytes", "hits", "misses",
//  "remote": {"hits", "misses", "errors", "bytes_down", "bytes_up"}}
nlohmann::ordered_json cache_summary_json(const CacheSummary& summary);

}  // namespace kbuild
