#include <catch2/catch.hpp>

#include "run/build_runner.hpp"

using namespace kbuild;

TEST_CASE("a diagnostic with file:line is a compile failure", "[unit][failure]") {
  FailureAnalysis a = analyze_failure(
      "k.cpp: In function 'int f()':\nk.cpp:1:29: error: expected primary-expression\n", true);
  CHECK(a.step == FailedStep::compile);
  CHECK(a.first_error == "k.cpp:1:29: error: expected primary-expression");
  CHECK(analyze_failure("k.cpp:3: fatal error: acl/acl.h: No such file\n", false).step ==
        FailedStep::compile);
}

TEST_CASE("a missing library is a link failure naming the library", "[unit][failure]") {
  FailureAnalysis a = analyze_failure(
      "/usr/bin/ld: cannot find -lascendcl: No such file or directory\n"
      "/usr/bin/ld: cannot find -ltorch_npu\ncollect2: error: ld returned 1 exit status\n",
      true);
  CHECK(a.step == FailedStep::link);
  CHECK(a.missing_libraries == std::vector<std::string>{"ascendcl", "torch_npu"});
}

TEST_CASE("an undefined reference is a link failure naming the symbol", "[unit][failure]") {
  FailureAnalysis a = analyze_failure(
      "/usr/bin/ld: /tmp/cc.o: in function `f':\nk.cpp:(.text+0x5): undefined reference to "
      "`missing_fn'\ncollect2: error: ld returned 1 exit status\n",
      true);
  CHECK(a.step == FailedStep::link);
  CHECK(a.undefined_symbols == std::vector<std::string>{"missing_fn"});
}

TEST_CASE("a compile error wins over link noise; without linking it is always compile",
          "[unit][failure]") {
  CHECK(analyze_failure("k.cpp:1:1: error: x\ncollect2: error: ld returned 1\n", true).step ==
        FailedStep::compile);
  CHECK(analyze_failure("/usr/bin/ld: cannot find -lx\n", false).step == FailedStep::compile);
  CHECK(analyze_failure("", true).step == FailedStep::compile);  // e.g. the compiler crashed
}
