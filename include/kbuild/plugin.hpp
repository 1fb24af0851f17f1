#pragma once

#include <string>
#include <vector>

#include "kbuild/registry.hpp"

// Plugins: the packages loaded into the process Inductor runs in (torch_npu)
// and what their active backend changes in every C++ build of it: the base
// layer (torch_npu drops -march=native) and the device options of every
// device. The mechanism only; what each package does is its device file's
// "plugin" section (plugin_spec.hpp).
namespace kbuild {

struct PluginBackend;
struct PluginRelease;

struct PluginRequest {
  std::vector<std::string> names;  // --plugin, in order
  std::string device;              // --device: a device with a plugin section implies it
  std::string backend;             // --backend ("" when not given)
};

// One plugin as the process has it. Points into the registry's device files.
struct ActivePlugin {
  std::string name;  // the device whose file it is ("npu")
  const DeviceFile* file = nullptr;
  std::string backend;
  std::string backend_from;  // "--backend", the variable's name, or "default"
  const PluginBackend* state = nullptr;
  const PluginRelease* release = nullptr;  // the release reproduced; nullptr: none declared
  std::string release_from;                // the variable that named it; "" = the version file
  bool release_guessed = false;            // no version to go by: its backends are not enforced
  std::string package_root;                // "" when unknown
  std::string installed;                   // the package's own version; "" when not found
  bool patches_device = false;             // the state patches, and no unless_env switched it off
  std::string patch_off_by;                // "DISABLE_AOTI_PATCH=1" when that switched it off
};

struct ProcessPlugins {
  std::vector<ActivePlugin> active;
  std::vector<std::string> notes;
  bool took_backend = false;  // a plugin took --backend from a device that has none
};

// Activates the plugins `request` names (and the one its device implies):
// picks each one's release (its release_env, else the package's version
// file) and backend (--backend, else its backend_env, else its default).
// Throws Error(usage) for an unknown plugin, release or backend, and for a
// backend the release reproduced does not have.
ProcessPlugins activate_plugins(const Registry& registry, const PluginRequest& request,
                                const ResolveContext& ctx);

// Applies the active backends' base-layer edits to `base`; what they drop is
// kept in base.dropped() with the file:line and backend that dropped it.
void apply_base_edits(const ProcessPlugins& plugins, BuildOptions& base);

// The device options Inductor computes in that process: a patching plugin's
// options for every device (its own device also gets its file's lists), a
// plugin device whose backend patches nothing gets none of its own (as
// upstream), and anything else goes to the registry.
OptionsResult device_options_in_process(const Registry& registry, const ProcessPlugins& plugins,
                                        DeviceQuery query, const ResolveContext& ctx, bool strict);

}  // namespace kbuild
