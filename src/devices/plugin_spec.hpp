// The "package" and "plugin" sections of a device file: what an out-of-tree
// package (torch_npu) changes in every Inductor C++ build of a process while
// one of its backends is active, per backend and per release, as data.
// Format: README, "Plugins: what a package changes in the whole process".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "devices/device_file.hpp"

namespace kbuild {

// The package a device file belongs to, for discovery and `doctor`.
struct PackageSpec {
  std::string name;                                   // "torch_npu"
  TemplateString root;                                // "${torch_npu_root}"
  std::string version_file;                           // relative to the root: "version.py"
  std::string library;                                // relative to the root: "lib/libtorch_npu.so"
  std::string source_checkout_mark;                   // relative to the root: "../setup.py"
  std::string toolkit;                                // "CANN": the SDK the package runs on
  std::vector<TemplateString> toolkit_version_files;  // "Version=..." lines; first found wins
  int line = 0;
};

// One change to the base layer: drop an entry, or replace it with another.
struct BaseEdit {
  OptionList list = OptionList::cflags;
  std::string value;                       // as stored: "march=native"
  std::optional<std::string> replacement;  // unset: dropped
  int line = 0;
};

// Lists that replace the named lists of a block (a release's differences).
struct ListOverride {
  std::array<std::optional<std::vector<DeviceFileEntry>>, kOptionListCount> lists;
  bool empty() const {
    for (const auto& l : lists)
      if (l) return false;
    return true;
  }
};

// What the process looks like while one backend is active.
struct PluginBackend {
  std::string name;
  std::string description;
  std::string note;             // said once when this backend is active
  std::vector<BaseEdit> base;   // applied to every build's base layer
  bool patches_device = false;  // supplies every device's options
  // The patch is skipped when one of these variables has this value.
  std::map<std::string, std::string> unless_env;
  ListBlock every_device;  // every device's options while patched
  int line = 0;
};

// A known release of the package and how it differs from the file's lists.
// Keyed by its version ("2.12.0.post1"), or by a name ("master") for a
// development line whose version file says the torch it was built for.
struct PluginRelease {
  std::string version;  // "2.11.0.post2", or the name: "master"
  // A named release: the versions its version file says ("2.14.0"), which
  // also place it among the numbered ones. Empty for a numbered release.
  std::vector<std::string> versions;
  bool named = false;
  std::string cann;    // the CANN release it pairs with, informational
  std::string source;  // where it was read: "tag v26.1.0-pytorch2.12.0 (fa0f83fe49d3)"
  // The torch lines ("2.12") it is made for; by default its own MAJOR.MINOR.
  std::vector<std::string> torch_lines;
  // The plugin's backends this release has; nullopt: all of them.
  std::optional<std::vector<std::string>> backends;
  // backend -> the variables that switch its device-options patch off in
  // this release, replacing the backend's own unless_env ({} = none do).
  std::map<std::string, std::map<std::string, std::string>> unless_env;
  ListOverride every_device;
  ListOverride device;                       // the device's own lists
  std::map<std::string, std::string> notes;  // backend -> note for this release
  // backend -> base-layer edits that replace the backend's own for this
  // release (an older release patching the flags differently, or not at all)
  std::map<std::string, std::vector<BaseEdit>> base;
  int line = 0;
};

struct PluginSpec {
  std::string description;
  std::string backend_env;      // the variable that picks the backend
  std::string release_env;      // the variable that names the release ("" = none)
  std::string default_backend;  // else the file's default_backend
  std::map<std::string, PluginBackend> backends;
  std::vector<PluginRelease> releases;  // in the file's order
  int line = 0;
};

}  // namespace kbuild
