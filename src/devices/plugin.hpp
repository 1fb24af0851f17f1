// plugin: what an out-of-tree package (torch_npu) changes in a process, per backend and release.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "devices/device_file.hpp"
#include "devices/registry.hpp"

// Plugins: the packages loaded into the process Inductor runs in (torch_npu)
// and what their active backend changes in every C++ build of it: the base
// layer (torch_npu drops -march=native) and the device options of every
// device. The mechanism only; what each package does is its device file's
// "plugin" section (PluginSpec, devices/device_file.hpp).
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

// What a failure report, `doctor` and `--version` say about an active
// plugin: the version matrix (torch, the package, the toolkit), the release
// kbuild reproduces, the backend and whether device options are patched.
namespace kbuild {

struct PluginStatus {
  std::string plugin;        // "npu"
  std::string package;       // "torch_npu"
  std::string package_root;  // "" when unknown
  std::string installed;     // the package's version.py; "" when not found
  std::string release;       // the release reproduced; "" when none is declared
  std::string release_from;  // the variable that named it; "" = the version file (or a fallback)
  std::vector<std::string> backends;     // the release's backends (all the plugin's: none declared)
  std::vector<std::string> torch_lines;  // the torch lines the release is made for
  std::string backend, backend_from;
  bool patches_device = false;
  std::string patch_off_by;                                    // "DISABLE_AOTI_PATCH=1"
  std::string toolkit, toolkit_version;                        // "CANN", "8.0.RC1" ("" unknown)
  std::map<std::string, std::optional<std::string>> switches;  // unless_env variables as set
  std::map<std::string, bool> honoured;  // each of them: does the release reproduced honour it
  std::string torch_version;             // "" when unknown
};

PluginStatus plugin_status(const ActivePlugin& plugin, const ResolveContext& ctx);

// One line: "torch_npu 2.11.0.post5 (reproduced as 2.11.0.post1), backend triton (default),
// device options patched; backends of release 2.11.0.post1: triton, mlir, dvm, ascendc;
// DISABLE_AOTI_PATCH honoured".
std::string describe(const PluginStatus& status);

// What doctor warns about: a source checkout shadowing the installed
// package, and torch not of a line the release reproduced is made for.
std::vector<std::string> plugin_warnings(const PluginStatus& status, const DeviceFile& file);

}  // namespace kbuild

// Which of a plugin's known releases kbuild reproduces for the package
// version it found (or did not find), or for the release the user named.
namespace kbuild {

struct ReleaseQuery {
  std::string package;        // "torch_npu": names the package in notes
  std::string installed;      // the package's version file says; "" when not found
  std::string torch_version;  // torch's version.py; "" when unknown
  std::string profile_line;   // the Inductor profile in use ("2.11"): stands in for torch's line
  std::string named;          // the release the user named ("" = none)
  std::string named_by;       // the variable that named it: "KBUILD_TORCH_NPU_RELEASE"
};

struct ReleaseChoice {
  const PluginRelease* release = nullptr;  // nullptr: the plugin declares none
  std::string note;                        // why not the installed one, when it is not
  std::string chosen_by;                   // named_by when the user named it, else ""
  bool guessed = false;  // no version to go by: a guess from torch's line (or the newest)
};

// The named release, else the installed one. A known release (or a version
// a named release lists) is reproduced exactly; a version kbuild does not
// know gets the nearest lower known one, else the oldest, with a note. No
// installed version: the newest release made for torch's line (without a
// torch version, the profile's; a numbered release before a named line such
// as master), else the newest known.
// Throws Error(usage) when `named` is neither a release nor a version.
ReleaseChoice choose_release(const PluginSpec& plugin, const ReleaseQuery& query);

// "2.11.0+cu130" -> "2.11"; "" when it does not start with MAJOR.MINOR.
std::string torch_line_of(const std::string& version);

// The note that says which Inductor profile (`profile_line`) stands in when
// it is not one of the torch lines `release` is made for; "" when it is, or
// when torch's version is unknown.
std::string torch_line_note(const PluginRelease& release, const std::string& package,
                            const std::string& profile_line, const std::string& torch_version);

// "2.13, 2.14, 2.15".
std::string joined_lines(const std::vector<std::string>& lines);

}  // namespace kbuild
