// Environment: a snapshot that remembers every variable looked up.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/environment.hpp"
#include "util/environment.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

TEST_CASE("get records what was seen, set or not", "[unit][environment]") {
  Environment env{{{"A", "1"}, {"EMPTY", ""}}};
  CHECK(env.get("A") == std::optional<std::string>("1"));
  CHECK_FALSE(env.get("MISSING"));
  CHECK(env.get("EMPTY") == std::optional<std::string>(""));
  CHECK_FALSE(env.get_nonempty("EMPTY"));
  CHECK(env.get_nonempty("A") == std::optional<std::string>("1"));
  const auto& seen = env.consulted();
  REQUIRE(seen.size() == 3);
  CHECK(seen.at("A") == std::optional<std::string>("1"));
  CHECK_FALSE(seen.at("MISSING"));
  CHECK(seen.at("EMPTY") == std::optional<std::string>(""));
}

TEST_CASE("set and unset change what a child gets, sorted NAME=value", "[unit][environment]") {
  Environment env{{{"B", "2"}}};
  env.set("A", "x=y");
  env.set("B", "3");
  CHECK(env.entries() == Strings{"A=x=y", "B=3"});
  env.unset("A");
  env.unset("NEVER_SET");
  CHECK(env.entries() == Strings{"B=3"});
  CHECK(env.consulted().empty());  // setting is not looking up
  CHECK(Environment().entries().empty());
}

TEST_CASE("from_process snapshots this process's environment", "[unit][environment]") {
  ::setenv("KBUILD_ENV_TEST", "a=b c", 1);
  Environment env = Environment::from_process();
  ::setenv("KBUILD_ENV_TEST", "changed later", 1);
  CHECK(env.get("KBUILD_ENV_TEST") == std::optional<std::string>("a=b c"));
  ::unsetenv("KBUILD_ENV_TEST");
}

// data_dir: KBUILD_DATA_DIR, else beside the binary, else (a build tree,
// as this test runs in) the source tree's configs.
namespace fs = std::filesystem;

TEST_CASE("KBUILD_DATA_DIR wins when set and not empty", "[unit][install_layout]") {
  CHECK(data_dir(Environment{{{"KBUILD_DATA_DIR", "/opt/kbuild-data"}}}) == "/opt/kbuild-data");
  CHECK(data_dir(Environment{{{"KBUILD_DATA_DIR", ""}}}) != "");
}

TEST_CASE("from the build tree, the source tree's configs", "[unit][install_layout]") {
  const fs::path dir = data_dir(Environment());
  CHECK(fs::equivalent(dir, fs::path(kbuild_test::source_root()) / "configs"));
  CHECK(fs::is_directory(dir / "devices"));
}

TEST_CASE("kbuild_program: the running binary's real path, which names this binary",
          "[unit][install_layout]") {
  const std::string program = kbuild_program();
  CHECK(program != "/proc/self/exe");
  CHECK(fs::path(program).is_absolute());
  CHECK(fs::equivalent(program, "/proc/self/exe"));
}
