#include "kbuild/config_search.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "devices/device_file.hpp"
#include "devices/device_file_lint.hpp"
#include "devices/device_file_provider.hpp"
#include "devices/trust.hpp"
#include "kbuild/error.hpp"

namespace fs = std::filesystem;

namespace kbuild {

std::vector<ConfigSource> config_sources(const std::string& data_dir, const Environment& env,
                                         const std::vector<std::string>& config_files) {
  std::vector<ConfigSource> sources;
  if (!data_dir.empty()) sources.push_back({data_dir + "/devices", true, false});
  sources.push_back({"/etc/kbuild/devices.d", true, false});
  if (auto xdg = env.get_nonempty("XDG_CONFIG_HOME"))
    sources.push_back({*xdg + "/kbuild/devices.d", true, false});
  else if (auto home = env.get_nonempty("HOME"))
    sources.push_back({*home + "/.config/kbuild/devices.d", true, false});
  if (auto extra = env.get_nonempty("KBUILD_CONFIG_PATH")) {
    std::istringstream parts(*extra);
    std::string dir;
    while (std::getline(parts, dir, ':'))
      if (!dir.empty()) sources.push_back({dir, true, true});
  }
  for (const std::string& file : config_files) sources.push_back({file, false, true});
  return sources;
}

LoadedConfigs register_device_files(const std::vector<ConfigSource>& sources, Registry& registry,
                                    bool allow_untrusted, const std::string& cache_root) {
  LoadedConfigs loaded;
  auto require_trusted = [&](const Status& trust) {
    if (!trust && !allow_untrusted) throw Error(ErrorKind::config, trust.why());
  };
  auto load = [&](const std::string& path) {
    DeviceFile file = load_device_file(path, !allow_untrusted, cache_root);
    file.check_program_trust = !allow_untrusted;
    for (std::string& warning : device_file_warnings(file))
      loaded.warnings.push_back(std::move(warning));
    std::string device = file.device;
    registry.register_device(device, make_provider(std::move(file)));
    loaded.files.push_back(path);
  };
  for (const ConfigSource& source : sources) {
    std::error_code ec;
    // A symlink loop or a permission problem is an error, never "missing".
    fs::file_status status = fs::status(source.path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error(ErrorKind::config,
                  "cannot use " +
                      std::string(source.is_directory ? "config directory " : "--config ") +
                      source.path + ": " + ec.message());
    if (!source.is_directory) {
      if (!fs::exists(status))
        throw Error(ErrorKind::config, "--config " + source.path + ": no such file");
      if (!fs::is_regular_file(status))
        throw Error(ErrorKind::config, "--config " + source.path + ": not a regular file");
      load(source.path);
      continue;
    }
    if (!fs::exists(status)) {
      if (source.must_exist)
        loaded.warnings.push_back("KBUILD_CONFIG_PATH entry " + source.path + " does not exist");
      continue;
    }
    if (!fs::is_directory(status))
      throw Error(ErrorKind::config, "config directory " + source.path + " is not a directory");
    require_trusted(check_trusted(source.path, "config directory"));
    std::vector<std::string> files;
    fs::directory_iterator it(source.path, ec);
    if (ec)
      throw Error(ErrorKind::config,
                  "cannot read config directory " + source.path + ": " + ec.message());
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->path().extension() == ".json") files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      if (!fs::is_regular_file(f, ec))
        throw Error(ErrorKind::config, "device file " + f + " is not a regular file");
      try {
        load(f);
      } catch (const Error& e) {
        // Every build reads the directory: one bad file stops them all.
        if (e.kind() != ErrorKind::config) throw;
        throw Error(e.kind(),
                    std::string(e.what()) + " (every build reads " + source.path +
                        ": fix the file, or rename it without .json to skip it)",
                    e.detail());
      }
    }
  }
  return loaded;
}

}  // namespace kbuild
