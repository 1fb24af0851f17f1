// Providers made from device files: declarative lists, or an external
// program (the callback out of process).
#pragma once

#include <memory>

#include "kbuild/device_file.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

// A provider for `file`: lists (ConfigProvider) or exec (ExecProvider).
std::shared_ptr<const Provider> make_provider(DeviceFile file);

// Parses an exec provider's stdout: a JSON object with some of the 7 keys,
// each an array of strings. Throws Error(provider) naming `who`.
BuildOptions parse_provider_output(const std::string& text, const std::string& who,
                                   const Origin& origin);

}  // namespace kbuild
