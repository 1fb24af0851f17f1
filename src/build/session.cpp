#include "build/session.hpp"

#include <chrono>

#include "devices/device_file.hpp"
#include "kbuild/error.hpp"
#include "site/site.hpp"
#include "util/environment.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

Session::Session(const SessionRequest& options, const Environment& e, const FileSystem& f)
    : env(e), files(f) {
  auto start = std::chrono::steady_clock::now();
  site = resolve_site(options.site, env);
  // --no-torch still follows a --torch-root it was given (its base layer).
  Paths profile_paths = site.paths;
  if (options.site.no_torch && !options.site.torch_root.empty())
    profile_paths.torch_root = options.site.torch_root;
  profile = choose_profile_for(profiles_dir(env), options.site.torch_version, profile_paths,
                               cache_root(env), !options.allow_untrusted_device_files, files);
  if (profile.note) site.notes.push_back(*profile.note);
  device_files =
      register_device_files(device_file_sources(data_dir(env), env, options.device_files), registry,
                            options.allow_untrusted_device_files, cache_root(env), files);
  timings.push_back({"config", seconds_since(start)});
}

std::vector<std::string> Session::warnings() const {
  std::vector<std::string> all = device_files.warnings;
  for (const std::string& w : registry.warnings()) all.push_back(w);
  return all;
}

std::optional<DeviceListing> Session::listing(const std::string& device) const {
  for (DeviceListing& d : registry.list())
    if (d.name == device) return std::move(d);
  return std::nullopt;
}

std::string Session::backend_of(const DeviceQuery& query) const {
  if (!query.backend.empty()) return query.backend;
  if (auto d = listing(query.device_type))
    for (const BackendInfo& b : d->backends)
      if (b.is_default) return b.name;
  return "";
}

std::string device_description(const DeviceListing& device) {
  static const std::pair<const char*, const char*> kBuiltIn[] = {
      {"cpu", "the host CPU (Inductor's default device)"},
      {"cuda", "NVIDIA GPUs through CUDA (AMD GPUs on a ROCm torch)"},
      {"xpu", "Intel GPUs through SYCL"},
      {"mps", "Apple GPUs through Metal"},
  };
  if (device.kind == "built-in") {
    for (const auto& [name, what] : kBuiltIn)
      if (device.name == name) return what;
    return "";
  }
  try {
    return load_device_file(device.source).description;
  } catch (const Error&) {
    return "";  // it loaded a moment ago; a file changed since says nothing here
  }
}

std::optional<std::string> Session::device_suggestion(const std::string& device) const {
  if (listing(device)) return std::nullopt;
  std::vector<std::string> known;
  for (const DeviceListing& d : registry.list()) known.push_back(d.name);
  return closest_match(device, known);
}

std::optional<std::string> unknown_device_warning(const Session& session, const std::string& device,
                                                  bool strict) {
  auto match = session.device_suggestion(device);
  if (!match) return std::nullopt;
  std::string what = "unknown device '" + device + "'; did you mean '" + *match + "'?";
  if (strict) throw Error(ErrorKind::usage, what + " (--strict)");
  return what + " (building with no device options; --strict makes this an error)";
}

}  // namespace kbuild
