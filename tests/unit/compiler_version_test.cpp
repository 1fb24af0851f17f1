// compiler_version: the first line of `CXX --version`, never an error
// (fake compilers written by the test: no g++ runs).
#include "site/site.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

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
