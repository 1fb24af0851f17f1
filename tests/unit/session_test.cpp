#include "build/session.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "diagnose/report.hpp"
#include "run/run_settings.hpp"
#include "site/site.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using Vars = std::map<std::string, std::string>;

TEST_CASE("cache_settings: --cache-max-size, else KBUILD_CACHE_MAX_SIZE, else 4G", "[session]") {
  Environment env(Vars{{"KBUILD_CACHE_DIR", "/c"}, {"KBUILD_CACHE_MAX_SIZE", "2G"}});
  CHECK(cache_settings(env, true, "").max_bytes == 2ull << 30);
  CHECK(cache_settings(env, true, "500M").max_bytes == 500ull << 20);
  CHECK(cache_settings(Environment(Vars{{"KBUILD_CACHE_DIR", "/c"}}), true, "").max_bytes ==
        4ull << 30);
  try {
    cache_settings(Environment(Vars{{"KBUILD_CACHE_MAX_SIZE", "12Q"}}), true, "");
    FAIL("a size that is not one was taken");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("KBUILD_CACHE_MAX_SIZE: cache size '12Q'") !=
          std::string::npos);
  }
}

TEST_CASE("report_path_problem: not a source, not the output, only a regular file", "[session]") {
  TempDir dir;
  kbuild_test::write_file(dir / "k.cpp", "int x;\n");
  CHECK(report_path_problem(dir / "r.json", {dir / "k.cpp"}, dir / "k.so"));
  Status source = report_path_problem(dir / "./k.cpp", {dir / "k.cpp"}, dir / "k.so");
  REQUIRE_FALSE(source);
  CHECK(source.why().find("is also a source") != std::string::npos);
  CHECK(source.kind() == ErrorKind::usage);
  Status output = report_path_problem(dir / "k.so", {dir / "k.cpp"}, dir / "sub/../k.so");
  REQUIRE_FALSE(output);
  CHECK(output.why().find("is also the output") != std::string::npos);
  CHECK(output.error().kind() == ErrorKind::usage);
  Status directory = report_path_problem(dir.str(), {dir / "k.cpp"}, dir / "k.so");
  REQUIRE_FALSE(directory);
  CHECK(directory.kind() == ErrorKind::output);
  CHECK(std::string(directory.error().what()).rfind("--report ", 0) == 0);
}

TEST_CASE("device_description: the built-ins say what they are", "[session]") {
  CHECK(device_description({"cpu", "built-in", "built-in", "", {}, {}}).find("CPU") !=
        std::string::npos);
  CHECK(device_description({"tpu", "built-in", "built-in", "", {}, {}}).empty());
  // A device file that is gone says nothing rather than fail the listing.
  CHECK(device_description({"acc", "config", "/no/such/acc.json", "replace", {}, {}}).empty());
}

TEST_CASE("compiler_version: the first line, or why there is none", "[compiler_version]") {
  Environment env = Environment::from_process();
  CompilerVersion gxx = compiler_version("g++", env);
  REQUIRE(gxx.path);
  CHECK(gxx.first_line.find("g++") != std::string::npos);
  CHECK(gxx.failure.empty());
  CHECK_FALSE(compiler_version("no-such-compiler-here", env).path);
  CompilerVersion broken = compiler_version("/bin/false", env);
  CHECK(broken.first_line.empty());
  CHECK_FALSE(broken.failure.empty());
}
