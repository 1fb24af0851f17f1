// The provider of a device file with lists: its device-level lists, the
// blocks whose "when" applies, then the chosen backend's layer chain.
#pragma once

#include <memory>
#include <string>

#include "devices/device_file.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

std::shared_ptr<const Provider> make_list_provider(DeviceFile file);

// Appends `block`'s lists, expanded, to `r` with origin `origin` (a
// provider name) and file:line; a required variable that is unset is an
// Error(provider) with the file's env_help; an unknown root leaves the entry
// out with a note.
void add_device_file_block(const DeviceFile& file, const ListBlock& block,
                           const TemplateContext& tctx, const std::string& origin,
                           OptionsResult& r);

// The absolute directory of a device file (${config_dir}); "--config x.json"
// lives in the current directory, not in "".
std::string device_file_dir(const std::string& path);

// The error for a required environment variable `name` that `entry` of
// `file` needs and is unset or empty (`expansion.missing_env`): the file's
// env_help for it, else how to set it; an empty one is said to be empty.
[[noreturn]] void throw_missing_env(const DeviceFile& file, const DeviceFileEntry& entry,
                                    const Expansion& expansion);

}  // namespace kbuild
