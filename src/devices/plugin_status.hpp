// What a failure report, `doctor` and `--version` say about an active
// plugin: the version matrix (torch, the package, the toolkit), the release
// kbuild reproduces, the backend and whether device options are patched.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/plugins.hpp"

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
