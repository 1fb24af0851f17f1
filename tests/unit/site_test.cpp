// resolve_site: explicit options first, then environment variables; Python
// is asked only for what is still unknown (never here: every path is given).
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "site/site.hpp"
#include "util/process.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
using namespace kbuild_test;

namespace fs = std::filesystem;

namespace {

SiteRequest given(const std::string& torch_root) {
  SiteRequest s;
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
  SiteRequest s = given("");
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
  SiteRequest s = given("");
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

// compiler_version: the first line of `CXX --version`, never an error
// (fake compilers written by the test: no g++ runs).
TEST_CASE("the first line of --version, the compiler found on PATH", "[unit][compiler_version]") {
  TempDir tmp;
  write_file(tmp / "g++",
             "#!/bin/sh\n[ \"$1\" = --version ] && printf 'g++ (Fake) 12.2.0\\nCopyright\\n'\n",
             true);
  Environment env{{{"PATH", tmp.str()}}};
  CompilerVersion v = compiler_version("g++", env);
  CHECK(v.path == std::optional<std::string>(tmp / "g++"));
  CHECK(v.first_line == "g++ (Fake) 12.2.0");
  CHECK(v.failure.empty());
}

TEST_CASE("not found, failing or unstartable: reported, not thrown", "[unit][compiler_version]") {
  TempDir tmp;
  Environment env{{{"PATH", tmp.str()}}};
  CompilerVersion missing = compiler_version("g++", env);
  CHECK_FALSE(missing.path);
  CHECK(missing.first_line.empty());

  write_file(tmp / "bad", "#!/bin/sh\necho nope\nexit 4\n", true);
  CompilerVersion bad = compiler_version(tmp / "bad", env);
  CHECK(bad.path);
  CHECK(bad.first_line.empty());
  CHECK(bad.failure == "exit code 4");

  write_file(tmp / "no-interpreter", "#!/nonexistent/sh\n", true);
  CompilerVersion broken = compiler_version(tmp / "no-interpreter", env);
  CHECK(broken.first_line.empty());
  CHECK_FALSE(broken.failure.empty());
}

// Discovery asks the real python3 (a fake site-packages on PYTHONPATH) and
// caches the answer; the cache is checked against what would change it.
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
  SiteRequest s;
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
std::string site_test_user_site(const Environment& env) {
  ProcessRequest opts;
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
Environment site_test_user_env(const std::string& base) {
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
  Environment env = site_test_user_env(dir / "userbase");
  const std::string user_site = site_test_user_site(env);
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
  Environment env = site_test_user_env(dir / "userbase");
  const std::string user_site = site_test_user_site(env);
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

// read_package_version: __version__ read from version.py, never imported.
TEST_CASE("read_package_version reads __version__ without importing anything",
          "[unit][package_version]") {
  TempDir dir;
  write_file(dir / "version.py", "# generated\n__version__ = \"2.11.0.post1\"\ngit = 'x'\n");
  CHECK(read_package_version(dir / "version.py") == std::optional<std::string>("2.11.0.post1"));
  write_file(dir / "empty.py", "version = '1'\n");
  CHECK_FALSE(read_package_version(dir / "empty.py"));
  CHECK_FALSE(read_package_version(dir / "missing.py"));
}

TEST_CASE("read_package_version: quotes, annotations, and lines that name no version",
          "[unit][package_version]") {
  TempDir dir;
  write_file(dir / "single.py", "__version__ = '1.2.3'\n");
  CHECK(read_package_version(dir / "single.py") == std::optional<std::string>("1.2.3"));
  write_file(dir / "annotated.py", "__version__: str = \"2.0.0+cpu\"  # 'note'\n");
  CHECK(read_package_version(dir / "annotated.py") == std::optional<std::string>("2.0.0+cpu"));
  // An empty value, or one that is not a string, is no version; a later line may be.
  write_file(dir / "later.py", "__version__ = ''\n__version__ = VERSION\n__version__ = '3'\n");
  CHECK(read_package_version(dir / "later.py") == std::optional<std::string>("3"));
  write_file(dir / "indented.py", "if x:\n    __version__ = '9'\n");
  CHECK_FALSE(read_package_version(dir / "indented.py"));
  write_file(dir / "unclosed.py", "__version__ = '1.0\n");
  CHECK_FALSE(read_package_version(dir / "unclosed.py"));
  // Only the first 200 lines are read: a huge file is not a version.py.
  write_file(dir / "huge.py", std::string(300, '\n') + "__version__ = '1'\n");
  CHECK_FALSE(read_package_version(dir / "huge.py"));
}

TEST_CASE("torch_is_rocm_build: a hip string is ROCm, None is not", "[unit][package_version]") {
  TempDir dir;
  write_file(dir / "rocm/version.py", "__version__ = '2.11.0+rocm6.4'\nhip = '6.4.1'\n");
  CHECK(torch_is_rocm_build(dir / "rocm"));
  write_file(dir / "cpu/version.py", "__version__ = '2.11.0+cpu'\nhip: Optional[str] = None\n");
  CHECK_FALSE(torch_is_rocm_build(dir / "cpu"));
}
