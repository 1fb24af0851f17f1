#include "run/run_settings.hpp"

#include "devices/device_file.hpp"
#include "kbuild/error.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

// The remote cache the device's file names, if any (the last default).
DeviceRemoteCache device_remote_cache(const Registry* registry, const std::string& device) {
  const DeviceFile* file = registry ? registry->device_file(device) : nullptr;
  if (!file || file->remote_cache_address.empty()) return {};
  return {file->remote_cache_address, file->path};
}

}  // namespace

CacheSettings cache_settings(const Environment& env, bool enabled, const std::string& max_size) {
  CacheSettings s;
  s.root = cache_root(env);
  s.enabled = enabled;
  s.compress = cache_compression(env);
  std::string size = max_size;
  std::string from = "--cache-max-size";
  if (size.empty()) {
    size = env.get_nonempty("KBUILD_CACHE_MAX_SIZE").value_or("");
    from = "KBUILD_CACHE_MAX_SIZE";
  }
  if (!size.empty()) {
    auto bytes = parse_size(size);
    if (!bytes)
      throw Error(ErrorKind::usage,
                  from + ": cache size '" + size + "' is not a size like 500M or 4G (0 to 1024T)");
    s.max_bytes = *bytes;
  }
  return s;
}

RunSettings resolve_run_settings(const BuildJob& job, const Registry* registry,
                                 const Environment& env) {
  const RunOptions& run = job.run;
  const std::string& device = job.request.query.device_type;
  RunSettings settings;
  settings.cache = cache_settings(env, run.use_cache, run.cache_max_size);
  if (run.use_cache)
    settings.remote = remote_cache_settings(job.remote_cache, job.remote_cache_readonly, env,
                                            device_remote_cache(registry, device));
  const std::string device_launcher =
      registry && !device.empty() ? registry->launcher_for(device) : "";
  settings.launcher = parse_launcher(run.launcher.empty() ? device_launcher : run.launcher);
  settings.launcher.resolve_native = run.resolve_native;
  if (run.timeout_s > 0)
    settings.timeout = std::chrono::milliseconds(static_cast<long>(run.timeout_s * 1000));
  return settings;
}

BuildJob compiler_mode_job(const Environment& env) {
  BuildJob job;
  job.run.use_cache = env.get_nonempty("KBUILD_NO_CACHE").value_or("0") == "0";
  job.run.launcher = env.get_nonempty("KBUILD_LAUNCHER").value_or("");
  return job;
}

}  // namespace kbuild
