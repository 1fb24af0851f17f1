// A device file: one JSON file registering one device, validated entirely
// when loaded (unknown keys, wrong types, bad ${...} are errors with
// file:line:column and the key path). Format: README, "Device files".
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/template_string.hpp"
#include "kbuild/build_options.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

struct DeviceFileEntry {
  TemplateString value;
  int line = 0;
  std::string pointer;  // JSON pointer, e.g. /include_dirs/3
};

// The 7 lists, optionally applying only in some modes.
struct ListBlock {
  std::array<std::vector<DeviceFileEntry>, kOptionListCount> lists;
  std::optional<bool> aot_mode;      // condition, when set
  std::optional<bool> compile_only;  // condition, when set
  bool applies(const DeviceQuery& q) const {
    return (!aot_mode || *aot_mode == q.aot_mode) &&
           (!compile_only || *compile_only == q.compile_only);
  }
};

// A named set of lists. Layers compose with `extends` (parents first); a
// backend is a layer chosen with --backend.
struct LayerDef {
  std::string name;
  std::string description;
  std::vector<std::string> extends;  // layer names
  ListBlock lists;
  int line = 0;
};

struct PackageSpec;  // plugin_spec.hpp
struct PluginSpec;

struct ExecSpec {
  std::vector<TemplateString> command;  // program and its first arguments
  double timeout_s = 30;
  int line = 0;
};

struct DeviceFile {
  std::string path;
  std::string device;
  std::string description;
  RegistrationMode mode = RegistrationMode::replace;
  int mode_line = 0;  // where "mode" is written (0: it is not)
  // Messages shown when a required ${env:NAME} is unset, by NAME.
  std::map<std::string, std::string> env_help;
  ListBlock lists;
  std::vector<ListBlock> when;
  std::optional<ExecSpec> exec;
  std::map<std::string, LayerDef> layers;
  std::map<std::string, LayerDef> backends;
  std::string default_backend;      // empty: none
  std::string launcher;             // --launcher for this device's builds, unless given
  bool check_program_trust = true;  // refuse an exec program others could write
  // The remote cache this device's builds use when neither --remote-cache
  // nor KBUILD_REMOTE_CACHE names one ("" for none); checked when loaded.
  std::string remote_cache_address;
  // What the file says about its package and the process it runs in, if anything.
  std::shared_ptr<const PackageSpec> package;
  std::shared_ptr<const PluginSpec> plugin;
};

// The layers `backend` applies, in order: each layer of its `extends` chain
// depth-first, parents before children, each once, then the backend itself.
// The file must be validated (parse_device_file checks names and cycles).
std::vector<const LayerDef*> backend_chain(const DeviceFile& file, const std::string& backend);

// Throws Error(config) naming file:line:column and key path.
DeviceFile parse_device_file(std::string_view text, const std::string& path);
// Reads the file through its real path (symlinks resolved) with O_NOFOLLOW.
// With `check_trust`, the opened file and every directory on its real path
// must be trusted (trust.hpp), else Error(config). With a `cache_root`, a
// valid file's parse is remembered there and read back while the file is
// unchanged (devices/device_file_cache.hpp); checks and errors are the same.
DeviceFile load_device_file(const std::string& path, bool check_trust = false,
                            const std::string& cache_root = "");

// Device names: lowercase letters, digits, '_' and '-', starting with a letter.
bool is_valid_device_name(std::string_view name);

}  // namespace kbuild
