// Warnings for device-file entries that load but do not mean what they say.
#pragma once

#include <string>
#include <vector>

#include "devices/device_file.hpp"

namespace kbuild {

// One warning (FILE:LINE: ...) for each cflags or ldflags entry, in any
// block, layer or backend, that starts with '-': Inductor puts a '-' before
// each of those entries itself, so "-funroll-loops" would reach the compiler
// as "--funroll-loops"; one for each libraries, include_dirs or
// libraries_dirs entry that starts with the flag Inductor puts before it
// (-l, -I, -L); one for "mode": "extend" on a device that is not built in.
std::vector<std::string> device_file_warnings(const DeviceFile& file);

}  // namespace kbuild
