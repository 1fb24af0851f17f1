// The one-line error for a failed compiler step: what failed, who asked for
// a missing library, and what became of the output.
#include "run/build_runner.hpp"

#include <catch2/catch.hpp>

#include "../support/fake_process_runner.hpp"
#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace {

using kbuild_test::exited;

FailureAnalysis link_failure() {
  FailureAnalysis a;
  a.step = FailedStep::link;
  return a;
}

}  // namespace

TEST_CASE("untouched_output: left as it was, or none written", "[unit][failure_message]") {
  TempDir tmp;
  CHECK(untouched_output(tmp / "k.so") == "; no " + tmp / "k.so" + " written");
  write_file(tmp / "k.so", "old");
  CHECK(untouched_output(tmp / "k.so") == "; " + tmp / "k.so" + " left as it was");
  std::filesystem::create_symlink(tmp / "nowhere", tmp / "dangling.so");
  CHECK(untouched_output(tmp / "dangling.so") == "; " + tmp / "dangling.so" + " left as it was");
}

TEST_CASE("a missing library names who added it and the dirs searched", "[unit][failure_message]") {
  BuildOptions options;
  options.add(OptionList::libraries, "acc_rt",
              Origin{Layer::device, "config acc", "/cfg/a.json", 7});
  options.add(OptionList::libraries_dirs, "/opt/acc/lib",
              Origin{Layer::device, "config acc", "", 0});
  FailureAnalysis a = link_failure();
  a.missing_libraries = {"acc_rt", "other"};
  Error e = toolchain_error(options, "/no/such/k.so", exited(1), a);
  CHECK(e.kind() == ErrorKind::link_failed);
  CHECK(std::string(e.what()) ==
        "link failed: cannot find -lacc_rt (added by config acc, /cfg/a.json:7); cannot find "
        "-lother (added by the passthrough or extra flags); searched -L /opt/acc/lib and the "
        "system's; fix the library dirs or install the library; no /no/such/k.so written");
  Error no_dirs = toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a);
  CHECK_THAT(std::string(no_dirs.what()), Catch::Contains("searched no -L dirs and the system's"));
}

TEST_CASE("undefined references: the first, and how many more", "[unit][failure_message]") {
  FailureAnalysis a = link_failure();
  a.undefined_symbols = {"foo()"};
  CHECK(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a).what()) ==
        "link failed: undefined reference to 'foo()'; a library is missing from the link line; "
        "no /no/k.so written");
  a.undefined_symbols = {"foo()", "bar()", "baz()"};
  CHECK_THAT(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a).what()),
             Catch::Contains("'foo()' and 2 more;"));
}

TEST_CASE("other failures: the stage, how the compiler ended and its first error",
          "[unit][failure_message]") {
  FailureAnalysis link = link_failure();
  link.first_error = "ld: bad relocation";
  CHECK(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), link).what()) ==
        "link failed (exit code 1): ld: bad relocation; no /no/k.so written");
  FailureAnalysis compile;
  compile.first_error = "k.cpp:1:1: error: expected something";
  Error e = toolchain_error(BuildOptions{}, "/no/k.so", exited(1), compile);
  CHECK(e.kind() == ErrorKind::compile_failed);
  CHECK(std::string(e.what()) ==
        "compile failed (exit code 1): k.cpp:1:1: error: expected something; no /no/k.so written");
  ProcessResult killed;
  killed.signal = 9;
  CHECK(
      std::string(toolchain_error(BuildOptions{}, "/no/k.so", killed, FailureAnalysis{}).what()) ==
      "compile failed (killed by signal 9 (Killed)); no /no/k.so written");
}

TEST_CASE("a missing header names the device file whose include dirs lack it",
          "[unit][failure_message]") {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "sdk/include");
  BuildOptions options;
  options.add(OptionList::include_dirs, tmp / "sdk/includ",
              Origin{Layer::device, "config acc", "/cfg/acc.json", 4});
  options.add(OptionList::include_dirs, tmp / "sdk/include",
              Origin{Layer::device, "config acc", "/cfg/acc.json", 5});
  options.add(OptionList::include_dirs, "/torch/include", Origin{Layer::torch, "torch", "", 0});
  const std::string gcc = "k.cpp:1:10: fatal error: acc/acc.h: No such file or directory\n";
  FailureAnalysis a = analyze_failure(gcc, true);
  REQUIRE(a.missing_headers == std::vector<std::string>{"acc/acc.h"});
  CHECK(analyze_failure("k.cpp:1:10: fatal error: 'acc/acc.h' file not found\n", true)
            .missing_headers == std::vector<std::string>{"acc/acc.h"});
  const std::string message = toolchain_error(options, "/no/k.so", exited(1), a).what();
  CHECK(message.rfind("compile failed (exit code 1): " + gcc.substr(0, gcc.size() - 1) +
                          "; acc/acc.h is in none of the include dirs that device files added: " +
                          tmp / "sdk/includ" + " (does not exist; config acc, /cfg/acc.json:4), " +
                          tmp / "sdk/include" + " (config acc, /cfg/acc.json:5); fix " +
                          "include_dirs in /cfg/acc.json, or install the header there",
                      0) == 0);
  CHECK(message.find("/torch/include") == std::string::npos);
  CHECK(message.find("no /no/k.so written") != std::string::npos);
  // Found in one of the device's dirs: the device file is not the cause.
  write_file(tmp / "sdk/include/acc.h", "");
  a.missing_headers = {"acc.h"};
  CHECK(
      std::string(toolchain_error(options, "/no/k.so", exited(1), a).what()).find("device files") ==
      std::string::npos);
  // No device file added include dirs: nothing to blame.
  CHECK(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a).what())
            .find("include dirs") == std::string::npos);
}
