#include "diagnose/version_details.hpp"

#include "devices/device_file.hpp"
#include "devices/plugin_spec.hpp"
#include "devices/plugin_status.hpp"
#include "kbuild/config_search.hpp"
#include "kbuild/error.hpp"
#include "kbuild/plugins.hpp"
#include "kbuild/profile_select.hpp"
#include "kbuild/registry.hpp"
#include "kbuild/site.hpp"
#include "util/install_layout.hpp"

namespace kbuild {
namespace {

// The Inductor profile a plain build would use.
std::string profile_line(const Environment& env) {
  try {
    Site site = resolve_site(SiteSettings{}, env);
    std::string line = describe(choose_profile_for(profiles_dir(env), "", site.paths));
    line.insert(line.begin(), '\n');  // not "\n" + line: g++ 12's false -Wrestrict
    return line;
  } catch (const Error& e) {
    return std::string("\nInductor profile: unknown (") + e.what() + ")";
  }
}

// Each registered plugin as a plain build would find it.
std::string plugin_lines(const Environment& env) {
  std::string text;
  try {
    Site site = resolve_site(SiteSettings{}, env);
    Registry registry;
    register_device_files(config_sources(data_dir(env), env, {}), registry, false);
    // With the profile a build would use: without a torch_npu version the
    // release reproduced is the newest for its line.
    ProfileChoice profile = choose_profile_for(profiles_dir(env), "", site.paths);
    ResolveContext ctx{site.paths, env, profile.profile.get()};
    for (const DeviceListing& d : registry.list()) {
      const DeviceFile* file = registry.device_file(d.name);
      if (!file || !file->plugin) continue;
      ProcessPlugins plugins = activate_plugins(registry, PluginRequest{{d.name}, "cpu", ""}, ctx);
      for (const ActivePlugin& p : plugins.active)
        text += "\nplugin " + p.name + ": " + describe(plugin_status(p, ctx));
    }
  } catch (const Error& e) {
    text += std::string("\nplugins: unknown (") + e.what() + ")";
  }
  return text;
}

}  // namespace

std::string version_details(const Environment& env) {
  std::string text = "device files are read from:";
  for (const ConfigSource& s : config_sources(data_dir(env), env, {})) text += "\n  " + s.path;
  text += "\n  then each --config FILE";
  return text + profile_line(env) + plugin_lines(env);
}

}  // namespace kbuild
