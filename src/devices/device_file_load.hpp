// device_file_load: finding and linting device files, and the providers they define (lists, or a
// program).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "devices/device_file.hpp"
#include "devices/registry.hpp"
#include "kbuild/environment.hpp"

// Where device files are found, in order (later registrations win):
//   1. the data directory installed with kbuild (<datadir>/devices)
//   2. /etc/kbuild/devices.d
//   3. $XDG_CONFIG_HOME/kbuild/devices.d (default ~/.config/kbuild/devices.d)
//   4. each directory in $KBUILD_CONFIG_PATH (':'-separated)
//   5. each --device-file FILE, in the order given
namespace kbuild {

struct DeviceFileSource {
  std::string path;
  bool is_directory = true;
  bool must_exist = false;  // --device-file files and KBUILD_CONFIG_PATH entries
};

std::vector<DeviceFileSource> device_file_sources(const std::string& data_dir,
                                                  const Environment& env,
                                                  const std::vector<std::string>& device_files);

struct LoadedDeviceFiles {
  std::vector<std::string> files;     // every device file read, in order
  std::vector<std::string> warnings;  // e.g. a missing KBUILD_CONFIG_PATH dir
};

// Reads every device file of `sources` (directories: their *.json, sorted by
// name) and registers it. Throws Error(config) on the first bad file, and on
// a file or directory others could have written (util/trusted_dir.hpp) unless
// `allow_untrusted`; exec providers check their program the same way.
// Valid files' parses are cached under `cache_root` when it is given, the
// files stated in `files`.
LoadedDeviceFiles register_device_files(const std::vector<DeviceFileSource>& sources,
                                        Registry& registry, bool allow_untrusted = false,
                                        const std::string& cache_root = "",
                                        const FileSystem& files = system_file_system());

}  // namespace kbuild

// The provider a device file describes: an exec provider when it has
// "exec", else a list provider.
namespace kbuild {

std::shared_ptr<const Provider> make_provider(DeviceFile file);

}  // namespace kbuild

// The provider of a device file with "exec": an external program asked for
// the 7 lists (the registry's callback, out of process).
namespace kbuild {

std::shared_ptr<const Provider> make_exec_provider(DeviceFile file);

// Parses an exec provider's stdout: a JSON object with some of the 7 keys,
// each an array of strings. Throws Error(provider) naming `who`.
BuildOptions parse_provider_output(const std::string& text, const std::string& who,
                                   const Origin& origin);

}  // namespace kbuild

// The provider of a device file with lists: its device-level lists, the
// blocks whose "when" applies, then the chosen backend's layer chain.
namespace kbuild {

std::shared_ptr<const Provider> make_list_provider(DeviceFile file);

// Appends `block`'s lists, expanded, to `r` with origin `origin` (a
// provider name) and file:line; a required variable that is unset is an
// Error(provider) with the file's env_help; an unknown root leaves the entry
// out with a note.
void add_device_file_block(const DeviceFile& file, const ListBlock& block,
                           const TemplateContext& tctx, const std::string& origin,
                           OptionsResult& r);

// The absolute directory of a device file (${config_dir}); "--device-file x.json"
// lives in the current directory, not in "".
std::string device_file_dir(const std::string& path);

// The error for a required environment variable `name` that `entry` of
// `file` needs and is unset or empty (`expansion.missing_env`): the file's
// env_help for it, else how to set it; an empty one is said to be empty.
[[noreturn]] void throw_missing_env(const DeviceFile& file, const DeviceFileEntry& entry,
                                    const Expansion& expansion);

}  // namespace kbuild

// Warnings for device-file entries that load but do not mean what they say.
namespace kbuild {

// One warning (FILE:LINE: ...) for each cflags or ldflags entry, in any
// block, layer or backend, that starts with '-': Inductor puts a '-' before
// each of those entries itself, so "-funroll-loops" would reach the compiler
// as "--funroll-loops"; one for each libraries, include_dirs or
// libraries_dirs entry that starts with the flag Inductor puts before it
// (-l, -I, -L); one for "mode": "extend" on a device that is not built in.
std::vector<std::string> device_file_warnings(const DeviceFile& file);

}  // namespace kbuild
