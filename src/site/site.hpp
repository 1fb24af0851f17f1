// site: the machine: torch, Python, the compiler and its version, found once and remembered.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/request.hpp"
#include "util/process.hpp"
#include "util/trusted_dir.hpp"

// Finding torch and Python without importing torch: one `python3` run that
// asks importlib where the packages are, cached on disk keyed on everything
// that could change the answer, so later runs spawn nothing.
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

// The machine paths the layers and providers need, discovered or given.
namespace kbuild {

struct Paths {
  std::optional<std::string> torch_root;      // the torch package dir (include/, lib/)
  std::optional<std::string> torch_npu_root;  // the torch_npu package dir
  std::optional<std::string> python_include;  // sysconfig.get_path("include")
  std::optional<std::string> python_libdir;   // sysconfig LIBDIR
  bool torch_is_rocm = false;                 // torch/version.py names a hip version
  std::string cuda_home = "/usr/local/cuda";
  // Inductor rewrites CUDA lib dirs to the dir holding libcudart_static.a
  // only when CUDA_HOME is set; kbuild also does when --cuda-home is given.
  bool cuda_home_explicit = false;
  std::string rocm_home = "/opt/rocm";
};

}  // namespace kbuild

// The machine paths for a run: explicit options first, then environment
// variables, then (cached) discovery from the Python interpreter.
namespace kbuild {

struct Site {
  Paths paths;
  std::vector<std::string> notes;
  std::optional<Discovery> discovery;  // set when Python was consulted
};

Site resolve_site(const SiteRequest& settings, const Environment& env);

}  // namespace kbuild

// `CXX --version`, asked once, for doctor and the report.
namespace kbuild {

struct CompilerVersion {
  std::optional<std::string> path;  // nullopt: not found on PATH
  std::string first_line;           // of its --version output ("" if it failed)
  std::string failure;              // why --version failed ("" when it worked)
};

// Never throws: a compiler that cannot say its version is reported, not fatal.
// `compiler --version` runs through `processes`.
CompilerVersion compiler_version(const std::string& compiler, const Environment& env,
                                 ProcessRunner& processes = real_processes());

}  // namespace kbuild

// Reads a Python package's version without importing it: the
// `__version__ = '...'` line of its version.py (torch, torch_npu).
namespace kbuild {

// The value of `__version__` in `version_file`; nullopt when the file is
// missing, unreadable or names no version.
std::optional<std::string> read_package_version(const std::string& version_file);

}  // namespace kbuild
