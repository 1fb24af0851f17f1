// Finding torch and Python without importing torch: one `python3` run that
// asks importlib where the packages are, cached on disk keyed on everything
// that could change the answer, so later runs spawn nothing.
#pragma once

#include <optional>
#include <string>

#include "kbuild/cache_root.hpp"
#include "kbuild/environment.hpp"

namespace kbuild {

struct PythonInfo {
  std::string python;  // the interpreter that answered
  std::optional<std::string> torch_root;
  std::optional<std::string> torch_npu_root;
  std::string include;  // sysconfig.get_path("include")
  std::string libdir;   // sysconfig LIBDIR
};

struct Discovery {
  std::optional<PythonInfo> info;
  std::string problem;  // why info is missing (python not found, failed...)
  bool from_cache = false;
};

// Asks `python` (a name looked up on PATH, or a path). Uses and refreshes the
// cache under `cache_dir` (empty: no cache).
Discovery discover_python(const std::string& python, const Environment& env,
                          const std::string& cache_dir);

// True when <torch_root>/version.py names a hip (ROCm) version.
bool torch_is_rocm_build(const std::string& torch_root);

}  // namespace kbuild
