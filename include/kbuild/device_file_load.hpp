#pragma once

#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/registry.hpp"

// Where device files are found, in order (later registrations win):
//   1. the data directory installed with kbuild (<datadir>/devices)
//   2. /etc/kbuild/devices.d
//   3. $XDG_CONFIG_HOME/kbuild/devices.d (default ~/.config/kbuild/devices.d)
//   4. each directory in $KBUILD_CONFIG_PATH (':'-separated)
//   5. each --config FILE, in the order given
namespace kbuild {

struct DeviceFileSource {
  std::string path;
  bool is_directory = true;
  bool must_exist = false;  // --config files and KBUILD_CONFIG_PATH entries
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
// a file or directory others could have written (trust.hpp) unless
// `allow_untrusted`; exec providers check their program the same way.
// Valid files' parses are cached under `cache_root` when it is given.
LoadedDeviceFiles register_device_files(const std::vector<DeviceFileSource>& sources,
                                        Registry& registry, bool allow_untrusted = false,
                                        const std::string& cache_root = "");

}  // namespace kbuild
