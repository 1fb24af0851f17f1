// Providers made from device files: declarative lists, or an external
// program (the callback out of process).
#pragma once

#include <memory>

#include "kbuild/device_file.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

// A provider for `file`: lists (ConfigProvider) or exec (ExecProvider).
std::shared_ptr<const Provider> make_provider(DeviceFile file);

// Appends `block`'s lists, expanded, to `r` with origin `origin` (a
// provider name) and file:line; a required variable that is unset is an
// Error(provider) with the file's env_help; an unknown root leaves the entry
// out with a note.
void add_device_file_block(const DeviceFile& file, const ListBlock& block,
                           const TemplateContext& tctx, const std::string& origin,
                           OptionsResult& r);

// The absolute directory of a device file (${config_dir}).
std::string device_file_dir(const std::string& path);

// Parses an exec provider's stdout: a JSON object with some of the 7 keys,
// each an array of strings. Throws Error(provider) naming `who`.
BuildOptions parse_provider_output(const std::string& text, const std::string& who,
                                   const Origin& origin);

}  // namespace kbuild
