// driver: what the CLI needs of the driver besides its public API: the types
// the public header only names (build/compilation.hpp, diagnose/explain.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "build/compilation.hpp"
#include "build/session.hpp"
#include "diagnose/explain.hpp"
#include "kbuild/driver.hpp"
#include "plan/compiler_call.hpp"
#include "plan/plan.hpp"
#include "run/load_check.hpp"

namespace kbuild {

// What a build whose library loads only with its library dirs on
// LD_LIBRARY_PATH says about it (--check-load found so).
std::string only_with_library_path_note(const BuildPlan& plan, const LoadCheckResult& load);

}  // namespace kbuild
