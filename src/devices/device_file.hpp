// device_file: the device file: parsed and validated, its package and plugin parts included,
// remembered between runs; the parts the rest of the library uses.
#pragma once

#include <sys/stat.h>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/pkg_config.hpp"
#include "devices/registry.hpp"
#include "devices/template_string.hpp"
#include "kbuild/build_options.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"

// A device file: one JSON file registering one device, validated entirely
// when loaded (unknown keys, wrong types, bad ${...} are errors with
// file:line:column and the key path). Format: README, "Device files".
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

struct PackageSpec;  // below
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
  // "pkg_config": packages whose cflags and libraries follow the device-level lists.
  std::vector<PkgConfigPackage> pkg_config;
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
// must be trusted (util/trusted_dir.hpp), else Error(config). With a `cache_root`, a
// valid file's parse is remembered there and read back while the file is
// unchanged (util/parsed_file_cache.hpp), stated in `files`; checks and
// errors are the same.
DeviceFile load_device_file(const std::string& path, bool check_trust = false,
                            const std::string& cache_root = "",
                            const FileSystem& files = system_file_system());

// Device names: lowercase letters, digits, '_' and '-', starting with a letter.
bool is_valid_device_name(std::string_view name);

}  // namespace kbuild

// A parsed device file remembered between runs (parsed_file_cache.hpp): a
// valid file is parsed and validated once, and later runs read the result
// back while the opened file and kbuild itself keep their identity. A file
// that fails validation is never remembered, so its error comes out the
// same every time.
namespace kbuild {

class ParsedFileCache;

// The bytes a cache entry holds for `file`, and back; decoding fails
// (nullopt) on anything malformed, a ${...} that does not parse included.
std::string encode_device_file(const DeviceFile& file);
std::optional<DeviceFile> decode_device_file(const std::string& bytes);

// The file `path` (real path `real`, open, its status `st`) as remembered,
// if it is.
std::optional<DeviceFile> cached_device_file(const ParsedFileCache& cache, const std::string& path,
                                             const std::string& real, const struct stat& st);
// Remembers `file`, parsed from `real` and stated after it was read as `st`.
void remember_device_file(const ParsedFileCache& cache, const DeviceFile& file,
                          const std::string& real, const struct stat& st);

}  // namespace kbuild

// The "package" and "plugin" sections of a device file: what an out-of-tree
// package (torch_npu) changes in every Inductor C++ build of a process while
// one of its backends is active, per backend and per release, as data.
// Format: README, "Plugins: what a package changes in the whole process".
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

// Reads and validates the "package" and "plugin" sections of a device file
// (PackageSpec, PluginSpec above), with file:line:column and key-path errors like the rest.
namespace kbuild {

// Fills file.package and file.plugin from `doc`; throws Error(config).
// Runs after the rest of the file is read: it checks the plugin's backends
// against the file's.
void read_plugin_sections(const JsonDocument& doc, const std::string& path, DeviceFile& file);

// "2.11.0.post2" -> {2, 11, 0, 2}; nullopt when it has no leading number.
std::optional<std::vector<long>> parse_release_version(const std::string& version);

// The release line of a version: its first three numbers ("2.11.0").
std::string release_line(const std::string& version);

}  // namespace kbuild
