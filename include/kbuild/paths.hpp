// The machine paths the layers and providers need, discovered or given.
#pragma once

#include <optional>
#include <string>

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
