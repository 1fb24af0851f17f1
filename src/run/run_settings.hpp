// run_settings: a run's settings (the output cache, the remote cache with its signing and
// read-only, the launcher, the time limit, the load check), resolved once, by one function,
// from what the caller asked, the environment and the device file; what the runner reads.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "devices/registry.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/request.hpp"
#include "plan/plan.hpp"
#include "run/cache_key.hpp"
#include "run/load_check.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"
#include "util/process.hpp"

// Builds, dry runs, `explain` and `kbuild cc` all take their settings from
// resolve_run_settings, so that they never disagree: a limit one honours and
// another ignores, a value one refuses and another accepts.
namespace kbuild {

class Storage;

// What a build runs with: the settings resolved from the request (by
// resolve_run_settings alone), then the caches they opened and what the
// PCH job adds, which the runner (run_build, run_pch) reads.
struct RunSettings {
  CacheSettings cache;  // root, on or off, size limit, compression
  // url "": none (also with the output cache off, which the remote stands behind).
  RemoteCacheSettings remote;
  Launcher launcher;  // --launcher, else the device file's; resolve_native set
  // Each compiler step is ended (its whole process group) after this long.
  std::optional<std::chrono::milliseconds> timeout;
  LoadCheckSettings load_check;  // the loader program (the steps say whether to check)

  // The caches `cache` and `remote` opened (null, or disabled: always
  // compile); the remote stands behind the local one, used only with it.
  OutputCache* output_cache = nullptr;
  RemoteCache* remote_cache = nullptr;
  // What replaces the machine-local parts of the key for the remote (the
  // precompiled header's identity and path).
  ShareableParts remote_parts;
  // Give the key machines share in BuildOutcome::shared_key, also after a
  // local hit (a --pch header build: its kernels' shared keys name it).
  bool report_shared_key = false;
  // Added to the cache key: what the command line cannot show (the identity
  // of the precompiled header it includes).
  std::vector<std::string> key_extra;
  ProcessRunner* processes = nullptr;  // null: real processes
  // What the key, the manifest and a hit's check state and read of the
  // world (the session's; tests pass a fake).
  const FileSystem* files = &system_file_system();
  // The observer library preloaded into observed steps; "": the one
  // installed with kbuild (observer_library()). Tests that play the
  // compiler name any file and write its records themselves.
  std::string observer;
  // Tests: the storage to use instead of the one `output_cache` and
  // `remote_cache` compose (run/storage.hpp).
  Storage* storage = nullptr;
  // Where a hit replays what the compiler printed (its stdout and stderr),
  // as a miss passes it through.
  int replay_stdout = 1, replay_stderr = 2;
};

// The one resolution of a run's settings, from what `request` asks of the run
// (--no-cache, --cache-max-size, --launcher, --timeout, --remote-cache and
// its read-only, --check-load), the environment, and the file of the device asked for,
// registered in `registry` (null: no device file). Throws Error(usage) for
// a size that is not one, a bad remote address, key, timeout or size, or a
// launcher with an unbalanced quote: before anything runs, for a dry run
// as for the build.
RunSettings resolve_run_settings(const BuildRequest& run, const Registry* registry,
                                 const Environment& env);

// Compiler mode's request (`kbuild cc`, a masquerade link), which has no flags:
// KBUILD_NO_CACHE=1 turns the cache off, KBUILD_LAUNCHER names the
// launcher; the rest (the size limit, the remote cache) is read as a build
// reads it.
BuildRequest compiler_mode_request(const Environment& env);

// The output cache's settings: root from the environment, the size limit
// from `max_size` (--cache-max-size), else KBUILD_CACHE_MAX_SIZE, else 4G.
// Throws Error (usage) for a size that is not one.
CacheSettings cache_settings(const Environment& env, bool enabled, const std::string& max_size);

}  // namespace kbuild
