// The provider of a device file with "exec": an external program asked for
// the 7 lists (the registry's callback, out of process).
#pragma once

#include <memory>
#include <string>

#include "devices/device_file.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

std::shared_ptr<const Provider> make_exec_provider(DeviceFile file);

// Parses an exec provider's stdout: a JSON object with some of the 7 keys,
// each an array of strings. Throws Error(provider) naming `who`.
BuildOptions parse_provider_output(const std::string& text, const std::string& who,
                                   const Origin& origin);

}  // namespace kbuild
