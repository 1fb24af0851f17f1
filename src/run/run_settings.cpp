#include "run/run_settings.hpp"

#include "devices/device_file.hpp"
#include "kbuild/error.hpp"
#include "util/environment.hpp"
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

RunSettings resolve_run_settings(const BuildRequest& run, const Registry* registry,
                                 const Environment& env) {
  const std::string& device = run.query.device_type;
  RunSettings settings;
  settings.cache = cache_settings(env, run.use_cache, run.cache_max_size);
  if (run.use_cache)
    settings.remote = remote_cache_settings(run.remote_cache, run.remote_cache_readonly, env,
                                            device_remote_cache(registry, device));
  const std::string device_launcher =
      registry && !device.empty() ? registry->launcher_for(device) : "";
  settings.launcher = parse_launcher(run.launcher.empty() ? device_launcher : run.launcher);
  settings.launcher.resolve_native = run.resolve_native;
  if (run.timeout_s > 0)
    settings.timeout = std::chrono::milliseconds(static_cast<long>(run.timeout_s * 1000));
  // A dry run loads nothing: no loader to find.
  if (run.load_check && !run.dry_run) settings.load_check.loader = {load_check_helper()};
  settings.load_check.required_symbols = run.required_symbols;
  settings.load_check.strict = run.load_check_strict;
  return settings;
}

BuildRequest compiler_mode_request(const Environment& env) {
  BuildRequest request;
  request.use_cache = env.get_nonempty("KBUILD_NO_CACHE").value_or("0") == "0";
  request.launcher = env.get_nonempty("KBUILD_LAUNCHER").value_or("");
  return request;
}

}  // namespace kbuild
