// run_settings: a run's settings (the output cache, the remote cache with its signing and
// read-only, the launcher, the time limit), resolved once, by one function, from what the
// caller asked, the environment and the device file.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "devices/registry.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/request.hpp"
#include "plan/plan.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"

// Builds, dry runs, `explain` and `kbuild cc` all take their settings from
// resolve_run_settings, so that they never disagree: a limit one honours and
// another ignores, a value one refuses and another accepts.
namespace kbuild {

struct RunSettings {
  CacheSettings cache;  // root, on or off, size limit, compression
  // url "": none (also with the output cache off, which the remote stands behind).
  RemoteCacheSettings remote;
  Launcher launcher;  // --launcher, else the device file's; resolve_native set
  std::optional<std::chrono::milliseconds> timeout;  // each compiler step's limit
};

// The one resolution of a run's settings, from what `job` asks of the run
// (--no-cache, --cache-max-size, --launcher, --timeout, --remote-cache and
// its read-only), the environment, and the file of the device asked for,
// registered in `registry` (null: no device file). Throws Error(usage) for
// a size that is not one, a bad remote address, key, timeout or size, or a
// launcher with an unbalanced quote: before anything runs, for a dry run
// as for the build.
RunSettings resolve_run_settings(const BuildJob& job, const Registry* registry,
                                 const Environment& env);

// Compiler mode's job (`kbuild cc`, a masquerade link), which has no flags:
// KBUILD_NO_CACHE=1 turns the cache off, KBUILD_LAUNCHER names the
// launcher; the rest (the size limit, the remote cache) is read as a build
// reads it.
BuildJob compiler_mode_job(const Environment& env);

// The output cache's settings: root from the environment, the size limit
// from `max_size` (--cache-max-size), else KBUILD_CACHE_MAX_SIZE, else 4G.
// Throws Error (usage) for a size that is not one.
CacheSettings cache_settings(const Environment& env, bool enabled, const std::string& max_size);

}  // namespace kbuild
