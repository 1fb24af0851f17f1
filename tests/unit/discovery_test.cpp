// Discovery asks the real python3 (a fake site-packages on PYTHONPATH) and
// caches the answer; the cache is checked against what would change it.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "site/site.hpp"
#include "util/process.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {
bool have_python() {
  return find_executable("python3", Environment::from_process()).has_value();
}
}  // namespace

TEST_CASE("discovery finds torch and torch_npu on the interpreter's path without importing them",
          "[unit][discovery]") {
  if (!have_python()) {
    WARN("python3 not installed: skipped");
    return;
  }
  TempDir dir;
  make_fake_torch(dir / "site/torch", false);
  // An __init__ that would fail if imported: discovery must not import it.
  write_file(dir / "site/torch/__init__.py", "raise SystemExit('torch was imported')\n");
  write_file(dir / "site/torch_npu/__init__.py", "raise SystemExit('imported')\n");
  Environment env = Environment::from_process();
  env.set("PYTHONPATH", dir / "site");
  Discovery d = discover_python("python3", env, dir / "cache");
  REQUIRE(d.info.has_value());
  CHECK_FALSE(d.from_cache);
  CHECK(d.info->torch_root == dir / "site/torch");
  CHECK(d.info->torch_npu_root == dir / "site/torch_npu");
  CHECK_FALSE(d.info->include.empty());

  Discovery again = discover_python("python3", env, dir / "cache");
  CHECK(again.from_cache);
  CHECK(again.info->torch_root == dir / "site/torch");
}

TEST_CASE("the discovery cache is invalidated when a path directory changes or PYTHONPATH differs",
          "[unit][discovery]") {
  if (!have_python()) {
    WARN("python3 not installed: skipped");
    return;
  }
  TempDir dir;
  fs::create_directories(dir / "site");
  Environment env = Environment::from_process();
  env.set("PYTHONPATH", dir / "site");
  Discovery none = discover_python("python3", env, dir / "cache");
  REQUIRE(none.info.has_value());
  CHECK_FALSE(none.info->torch_root.has_value());
  // "pip install torch": the site dir gains an entry, its mtime changes.
  make_fake_torch(dir / "site/torch", false);
  Discovery after = discover_python("python3", env, dir / "cache");
  CHECK_FALSE(after.from_cache);
  CHECK(after.info->torch_root == dir / "site/torch");

  Environment other = env;
  other.set("PYTHONPATH", dir / "elsewhere");
  CHECK_FALSE(discover_python("python3", other, dir / "cache").from_cache);
}

TEST_CASE("a missing interpreter is reported, not fatal", "[unit][discovery]") {
  Discovery d = discover_python("/nonexistent/python3", Environment{}, "");
  CHECK_FALSE(d.info.has_value());
  CHECK(d.problem.find("not found") != std::string::npos);
}

TEST_CASE("ROCm builds are recognised from torch/version.py", "[unit][discovery]") {
  TempDir dir;
  write_file(dir / "rocm/version.py",
             "__version__ = '2.11.0+rocm6.4'\nhip: Optional[str] = '6.4.43482'\n");
  write_file(dir / "cuda/version.py", "__version__ = '2.11.0+cu130'\nhip: Optional[str] = None\n");
  CHECK(torch_is_rocm_build(dir / "rocm"));
  CHECK_FALSE(torch_is_rocm_build(dir / "cuda"));
  CHECK_FALSE(torch_is_rocm_build(dir / "missing"));
}

TEST_CASE("site: flags beat environment; torch_npu is found beside torch; --no-torch drops torch",
          "[unit][site]") {
  TempDir dir;
  make_fake_torch(dir / "site/torch", false);
  fs::create_directories(dir / "site/torch_npu");
  Environment env;
  env.set("KBUILD_TORCH_ROOT", "/from/env");
  env.set("CUDA_HOME", "/opt/cuda-env");
  SiteSettings s;
  s.torch_root = dir / "site/torch";
  s.python_include = "/py/include";
  s.python_libdir = "/py/lib";
  Site site = resolve_site(s, env);
  CHECK(site.paths.torch_root == dir / "site/torch");
  CHECK(site.paths.torch_npu_root == dir / "site/torch_npu");
  CHECK(site.paths.cuda_home == "/opt/cuda-env");
  CHECK(site.paths.cuda_home_explicit);
  CHECK_FALSE(site.discovery.has_value());  // everything given: no python spawned
  CHECK(site.notes.empty());

  s.no_torch = true;
  Site plain = resolve_site(s, env);
  CHECK_FALSE(plain.paths.torch_root.has_value());
  CHECK(plain.notes.empty());
}

namespace {

// Python's user site for `env` (PYTHONUSERBASE), which need not exist.
std::string discovery_test_user_site(const Environment& env) {
  ProcessOptions opts;
  opts.capture_output = true;
  opts.environment = &env;
  ProcessResult r = run_process(
      {*find_executable("python3", env), "-c", "import site; print(site.getusersitepackages())"},
      opts);
  REQUIRE(r.success());
  return r.out.substr(0, r.out.find('\n'));
}

// The process's environment with the user site under `base` and nothing else
// that would hide it or put torch on the path.
Environment discovery_test_user_env(const std::string& base) {
  Environment env = Environment::from_process();
  for (const char* var : {"PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR",
                          "PYTHONHOME", "VIRTUAL_ENV"})
    env.unset(var);
  env.set("PYTHONUSERBASE", base);
  return env;
}

}  // namespace

TEST_CASE("a user site made after the answer was cached is seen (pip install --user)",
          "[unit][discovery]") {
  if (!have_python()) {
    WARN("python3 not installed: skipped");
    return;
  }
  TempDir dir;
  Environment env = discovery_test_user_env(dir / "userbase");
  const std::string user_site = discovery_test_user_site(env);
  REQUIRE(user_site.rfind(dir / "userbase/", 0) == 0);
  REQUIRE_FALSE(fs::exists(user_site));
  Discovery none = discover_python("python3", env, dir / "cache");
  REQUIRE(none.info.has_value());
  if (none.info->torch_root) {
    WARN("python3 has torch installed: skipped");
    return;
  }
  CHECK(discover_python("python3", env, dir / "cache").from_cache);
  // What `pip install --user torch` makes: the user site, absent before.
  make_fake_torch(user_site + "/torch", false);
  Discovery after = discover_python("python3", env, dir / "cache");
  CHECK_FALSE(after.from_cache);
  CHECK(after.info->torch_root == user_site + "/torch");
}

TEST_CASE("PYTHONNOUSERSITE, PYTHONSAFEPATH and PYTHONPLATLIBDIR are in the discovery key",
          "[unit][discovery]") {
  if (!have_python()) {
    WARN("python3 not installed: skipped");
    return;
  }
  TempDir dir;
  Environment env = discovery_test_user_env(dir / "userbase");
  const std::string user_site = discovery_test_user_site(env);
  make_fake_torch(user_site + "/torch", false);
  Discovery seen = discover_python("python3", env, dir / "cache");
  REQUIRE(seen.info.has_value());
  CHECK(seen.info->torch_root == user_site + "/torch");
  // Python without its user site cannot import that torch: neither may kbuild
  // compile against it.
  Environment no_user_site = env;
  no_user_site.set("PYTHONNOUSERSITE", "1");
  Discovery hidden = discover_python("python3", no_user_site, dir / "cache");
  CHECK_FALSE(hidden.from_cache);
  REQUIRE(hidden.info.has_value());
  CHECK_FALSE(hidden.info->torch_root.has_value());
  for (const auto& [var, value] :
       {std::pair{"PYTHONSAFEPATH", "1"}, {"PYTHONPLATLIBDIR", "lib64"}}) {
    INFO(var);
    Environment other = env;
    other.set(var, value);
    CHECK_FALSE(discover_python("python3", other, dir / "cache").from_cache);
  }
  CHECK(discover_python("python3", env, dir / "cache").from_cache);
}
