// site: the parts only the library uses (the API: kbuild/site.hpp).
#pragma once

#include <optional>
#include <string>

#include "kbuild/environment.hpp"

// `CXX --version`, asked once, for doctor and the report.
namespace kbuild {

struct CompilerVersion {
  std::optional<std::string> path;  // nullopt: not found on PATH
  std::string first_line;           // of its --version output ("" if it failed)
  std::string failure;              // why --version failed ("" when it worked)
};

// Never throws: a compiler that cannot say its version is reported, not fatal.
CompilerVersion compiler_version(const std::string& compiler, const Environment& env);

}  // namespace kbuild

// Reads a Python package's version without importing it: the
// `__version__ = '...'` line of its version.py (torch, torch_npu).
namespace kbuild {

// The value of `__version__` in `version_file`; nullopt when the file is
// missing, unreadable or names no version.
std::optional<std::string> read_package_version(const std::string& version_file);

}  // namespace kbuild
