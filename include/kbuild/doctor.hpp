#pragma once

#include <string>
#include <vector>

#include "kbuild/device_file_load.hpp"
#include "kbuild/plan.hpp"
#include "kbuild/registry.hpp"
#include "kbuild/site.hpp"

// `kbuild doctor`: checks the environment for a device without building.
namespace kbuild {

enum class CheckStatus { ok, warn, fail };
const char* status_name(CheckStatus status);

struct DoctorCheck {
  std::string name;
  CheckStatus status = CheckStatus::ok;
  std::string detail;
  std::string hint;  // what to do, for warn and fail
};

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
