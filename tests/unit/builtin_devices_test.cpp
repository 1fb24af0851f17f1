#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "site/search.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {
OptionsResult resolve(const std::string& device, const Paths& paths, const Environment& env) {
  Registry registry;
  return registry.resolve(DeviceQuery{device}, ResolveContext{paths, env}, false);
}
}  // namespace

TEST_CASE(
    "cuda: lib64 is rewritten to the real dir of libcudart_static.a plus stubs when CUDA_HOME is "
    "given",
    "[unit][builtin]") {
  TempDir dir;
  std::string real = dir / "cuda/targets/x86_64-linux/lib";
  fs::create_directories(real + "/stubs");
  write_file(real + "/libcudart_static.a", "");
  fs::create_directory_symlink("targets/x86_64-linux/lib", dir / "cuda/lib64");
  Paths paths;
  paths.torch_root = dir / "torch";
  paths.cuda_home = dir / "cuda";
  paths.cuda_home_explicit = true;
  Environment env;
  OptionsResult r = resolve("cuda", paths, env);
  CHECK(r.options.values(OptionList::libraries_dirs) ==
        Strings{dir / "torch/lib", real, real + "/stubs"});
  CHECK(r.options.values(OptionList::include_dirs) == Strings{dir / "cuda/include"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"cuda", "torch_cuda"});
  paths.cuda_home_explicit = false;  // like Inductor without CUDA_HOME: no rewrite
  CHECK(resolve("cuda", paths, env).options.values(OptionList::libraries_dirs) ==
        Strings{dir / "torch/lib", dir / "cuda/lib64"});
}

TEST_CASE("cuda: lib is used when lib64 is missing; cudnn and CUDA_INC_PATH are added",
          "[unit][builtin]") {
  TempDir dir;
  fs::create_directories(dir / "cuda/lib");
  Paths paths;
  paths.cuda_home = dir / "cuda";
  Environment env;
  env.set("CUDNN_HOME", "/opt/cudnn");
  env.set("CUDA_INC_PATH", "/opt/cuda-inc");
  OptionsResult r = resolve("cuda", paths, env);
  CHECK(r.options.values(OptionList::libraries_dirs) ==
        Strings{dir / "cuda/lib", "/opt/cudnn/lib"});
  CHECK(r.options.values(OptionList::include_dirs) ==
        Strings{dir / "cuda/include", "/opt/cuda-inc", "/opt/cudnn/include"});
  // No torch: torch_cuda is left out, with a note.
  CHECK(r.options.values(OptionList::libraries) == Strings{"cuda"});
  CHECK(r.notes.size() == 1);
}

TEST_CASE("cuda on a ROCm torch: USE_ROCM, __HIP_PLATFORM_AMD__ and torch_hip", "[unit][builtin]") {
  Paths paths;
  paths.torch_root = "/t";
  paths.torch_is_rocm = true;
  paths.rocm_home = "/opt/rocm";
  OptionsResult r = resolve("cuda", paths, Environment{});
  CHECK(r.options.values(OptionList::definitions) == Strings{" USE_ROCM", " __HIP_PLATFORM_AMD__"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"torch_hip"});
  CHECK(r.options.values(OptionList::include_dirs) == Strings{"/opt/rocm/include"});
}

TEST_CASE("xpu fails clearly without a SYCL runtime or without ze_loader", "[unit][builtin]") {
  TempDir dir;
  Paths paths;
  Environment env;
  env.set("LD_LIBRARY_PATH", dir.str());
  CHECK_THROWS_WITH(resolve("xpu", paths, env), Catch::Contains("SYCL runtime is not detected"));
  env.set("SYCL_HOME", "/opt/intel/sycl");
  if (!find_shared_library("ze_loader", Environment{})) {  // a machine without the real driver
    CHECK_THROWS_WITH(resolve("xpu", paths, env), Catch::Contains("libze_loader.so not found"));
  }
  write_file(dir / "libze_loader.so.1", "");
  OptionsResult r = resolve("xpu", paths, env);
  CHECK(r.options.values(OptionList::include_dirs) ==
        Strings{"/opt/intel/sycl/include", "/opt/intel/sycl/include/sycl"});
  CHECK(r.options.values(OptionList::libraries_dirs) == Strings{"/opt/intel/sycl/lib"});
}

TEST_CASE("find_shared_library searches LD_LIBRARY_PATH entries in order", "[unit][builtin]") {
  TempDir a, b;
  write_file(b / "libfoo_kbuild_test.so", "");
  Environment env;
  env.set("LD_LIBRARY_PATH", a.str() + "::" + b.str());
  CHECK(find_shared_library("foo_kbuild_test", env) == b.str());
  CHECK_FALSE(find_shared_library("foo_kbuild", env).has_value());
}
