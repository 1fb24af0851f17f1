// doctor: kbuild doctor and --version: what is installed and what is wrong with it.
#pragma once

#include <string>
#include <vector>

#include "devices/device_file_load.hpp"
#include "devices/registry.hpp"
#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "plan/plan.hpp"
#include "site/site.hpp"

// `kbuild doctor`: checks the environment for a device without building.
namespace kbuild {

const char* status_name(CheckStatus status);

struct DoctorInput {
  const Environment& env;
  const Site& site;
  std::vector<DeviceFileSource> device_file_sources;
  BuildRequest request;  // device, backend, modes, compiler; sources unused
  bool allow_untrusted_device_files = false;
  std::string torch_version;  // --torch-version (the Inductor profile's line)
};

std::vector<DoctorCheck> run_doctor(const DoctorInput& in);

// One line for the end of the table: how many checks passed, warned and
// failed, and what that means for building.
std::string doctor_summary(const std::vector<DoctorCheck>& checks);

// The worst status among `checks` (ok when empty).
CheckStatus worst(const std::vector<DoctorCheck>& checks);

}  // namespace kbuild

// What `kbuild --version` says after its own version: where device files are
// read from, the Inductor profile a plain build would use, and each plugin
// a device file registers, as a plain build would find them.
namespace kbuild {

// Lines without a trailing newline. Never throws: what cannot be found is
// said as "unknown (why)".
std::string version_details(const Environment& env);

}  // namespace kbuild
