// doctor: the parts only the library uses (the API: kbuild/doctor.hpp).
#pragma once

#include <string>

#include "kbuild/environment.hpp"

// What `kbuild --version` says after its own version: where device files are
// read from, the Inductor profile a plain build would use, and each plugin
// a device file registers, as a plain build would find them.
namespace kbuild {

// Lines without a trailing newline. Never throws: what cannot be found is
// said as "unknown (why)".
std::string version_details(const Environment& env);

}  // namespace kbuild
