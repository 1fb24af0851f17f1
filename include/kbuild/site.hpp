// The machine paths for a run: explicit options first, then environment
// variables, then (cached) discovery from the Python interpreter.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/discovery.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/paths.hpp"

namespace kbuild {

struct SiteSettings {
  std::string torch_root;      // --torch-root (else KBUILD_TORCH_ROOT, else discovered)
  std::string torch_npu_root;  // --torch-npu-root (else KBUILD_TORCH_NPU_ROOT, else beside torch)
  std::string python_include;  // --python-include
  std::string python_libdir;   // --python-libdir
  // --cuda-home, else CUDA_HOME, else CUDA_PATH, else the prefix of the nvcc
  // on PATH, else /usr/local/cuda (torch's _find_cuda_home order).
  std::string cuda_home;
  std::string python = "python3";
  bool no_torch = false;
  // --torch-version X.Y[.Z]: the torch whose Inductor profile to use (else
  // the found torch's version.py, else 2.11).
  std::string torch_version;
};

struct Site {
  Paths paths;
  std::vector<std::string> notes;
  std::optional<Discovery> discovery;  // set when Python was consulted
};

Site resolve_site(const SiteSettings& settings, const Environment& env);

}  // namespace kbuild
