// Reads a Python package's version without importing it: the
// `__version__ = '...'` line of its version.py (torch, torch_npu).
#pragma once

#include <optional>
#include <string>

namespace kbuild {

// The value of `__version__` in `version_file`; nullopt when the file is
// missing, unreadable or names no version.
std::optional<std::string> read_package_version(const std::string& version_file);

}  // namespace kbuild
