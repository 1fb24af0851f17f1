// resolve_site: explicit options first, then environment variables; Python
// is asked only for what is still unknown (never here: every path is given).
#include "site/site.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

SiteSettings given(const std::string& torch_root) {
  SiteSettings s;
  s.torch_root = torch_root;
  s.python_include = "/py/include";
  s.python_libdir = "/py/lib";
  s.python = "/nonexistent/python3";  // fails the test's expectations if it were run
  return s;
}

}  // namespace

TEST_CASE("every path given: no Python asked, torch_npu found beside torch", "[unit][site]") {
  TempDir tmp;
  fs::create_directories(tmp / "site-packages/torch/lib");
  fs::create_directories(tmp / "site-packages/torch_npu");
  Site site = resolve_site(given(tmp / "site-packages/torch"), Environment());
  CHECK_FALSE(site.discovery);
  CHECK(site.notes.empty());
  CHECK(site.paths.torch_root == std::optional<std::string>(tmp / "site-packages/torch"));
  CHECK(site.paths.torch_npu_root == std::optional<std::string>(tmp / "site-packages/torch_npu"));
  CHECK(site.paths.python_include == std::optional<std::string>("/py/include"));
  CHECK(site.paths.python_libdir == std::optional<std::string>("/py/lib"));
}

TEST_CASE("the option wins over KBUILD_TORCH_ROOT; a named root must exist", "[unit][site]") {
  TempDir tmp;
  fs::create_directories(tmp / "a");
  fs::create_directories(tmp / "b");
  Environment env{{{"KBUILD_TORCH_ROOT", tmp / "b"}}};
  CHECK(resolve_site(given(tmp / "a"), env).paths.torch_root ==
        std::optional<std::string>(tmp / "a"));
  CHECK(resolve_site(given(""), env).paths.torch_root == std::optional<std::string>(tmp / "b"));
  try {
    (void)resolve_site(given(tmp / "missing"), env);
    FAIL("accepted a missing --torch-root");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK_THAT(std::string(e.what()),
               Catch::StartsWith("--torch-root " + tmp / "missing" + " is not a directory"));
  }
  Environment missing{{{"KBUILD_TORCH_ROOT", tmp / "missing"}}};
  CHECK_THROWS_WITH(resolve_site(given(""), missing), Catch::StartsWith("KBUILD_TORCH_ROOT "));
}

TEST_CASE("--no-torch: no torch root, whatever the environment says", "[unit][site]") {
  SiteSettings s = given("");
  s.no_torch = true;
  Site site = resolve_site(s, Environment{{{"KBUILD_TORCH_ROOT", "/missing"}}});
  CHECK_FALSE(site.paths.torch_root);
  CHECK_FALSE(site.discovery);
  CHECK_FALSE(site.paths.torch_npu_root);
  s.torch_npu_root = "/npu";
  CHECK(resolve_site(s, Environment()).paths.torch_npu_root == std::optional<std::string>("/npu"));
}

TEST_CASE("CUDA: --cuda-home, CUDA_HOME, CUDA_PATH, then nvcc's prefix on PATH", "[unit][site]") {
  TempDir tmp;
  SiteSettings s = given("");
  s.no_torch = true;
  write_file(tmp / "cuda/bin/nvcc", "#!/bin/sh\n", true);
  Environment env{{{"CUDA_PATH", "/cuda-path"}, {"PATH", tmp / "cuda/bin"}}};
  Paths by_path = resolve_site(s, env).paths;
  CHECK(by_path.cuda_home == "/cuda-path");
  CHECK_FALSE(by_path.cuda_home_explicit);
  env.set("CUDA_HOME", "/cuda-home");
  CHECK(resolve_site(s, env).paths.cuda_home == "/cuda-home");
  CHECK(resolve_site(s, env).paths.cuda_home_explicit);
  s.cuda_home = "/flag";
  CHECK(resolve_site(s, env).paths.cuda_home == "/flag");
  s.cuda_home.clear();
  Environment nvcc_only{{{"PATH", tmp / "cuda/bin"}}};
  CHECK(resolve_site(s, nvcc_only).paths.cuda_home == tmp / "cuda");
  CHECK(resolve_site(s, Environment{{{"PATH", tmp.str()}}}).paths.cuda_home == "/usr/local/cuda");
  CHECK(resolve_site(s, Environment{{{"ROCM_PATH", "/rocm"}}}).paths.rocm_home == "/rocm");
}
