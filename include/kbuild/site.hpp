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
  std::string cuda_home;       // --cuda-home (else CUDA_HOME, else /usr/local/cuda)
  std::string python = "python3";
  bool no_torch = false;
};

struct Site {
  Paths paths;
  std::vector<std::string> notes;
  std::optional<Discovery> discovery;  // set when Python was consulted
};

Site resolve_site(const SiteSettings& settings, const Environment& env);

}  // namespace kbuild
