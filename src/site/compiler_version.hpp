// `CXX --version`, asked once, for doctor and the report.
#pragma once

#include <optional>
#include <string>

#include "kbuild/environment.hpp"

namespace kbuild {

struct CompilerVersion {
  std::optional<std::string> path;  // nullopt: not found on PATH
  std::string first_line;           // of its --version output ("" if it failed)
  std::string failure;              // why --version failed ("" when it worked)
};

// Never throws: a compiler that cannot say its version is reported, not fatal.
CompilerVersion compiler_version(const std::string& compiler, const Environment& env);

}  // namespace kbuild
