// Reads and validates the "package" and "plugin" sections of a device file
// (plugin_spec.hpp), with file:line:column and key-path errors like the rest.
#pragma once

#include <string>

#include "devices/device_file.hpp"
#include "util/json_locations.hpp"

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
