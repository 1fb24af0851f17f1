// Environment: a snapshot that remembers every variable looked up.
#include "kbuild/environment.hpp"

#include <cstdlib>

#include <catch2/catch.hpp>

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
