// Error kinds: each one exit code and one failure stage, both ways.
#include "kbuild/error.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace kbuild;

namespace {

const ErrorKind kAll[] = {
    ErrorKind::usage,          ErrorKind::config,      ErrorKind::provider,
    ErrorKind::compile_failed, ErrorKind::link_failed, ErrorKind::load_failed,
    ErrorKind::input,          ErrorKind::output,      ErrorKind::compiler_missing,
    ErrorKind::interrupted,    ErrorKind::internal};

}  // namespace

TEST_CASE("exit codes: distinct, documented values", "[unit][error]") {
  CHECK(exit_code(ErrorKind::usage) == 2);
  CHECK(exit_code(ErrorKind::config) == 3);
  CHECK(exit_code(ErrorKind::provider) == 4);
  CHECK(exit_code(ErrorKind::compile_failed) == 5);
  CHECK(exit_code(ErrorKind::link_failed) == 6);
  CHECK(exit_code(ErrorKind::load_failed) == 7);
  CHECK(exit_code(ErrorKind::input) == 8);
  CHECK(exit_code(ErrorKind::output) == 9);
  CHECK(exit_code(ErrorKind::compiler_missing) == 10);
  CHECK(exit_code(ErrorKind::interrupted) == 130);
  CHECK(exit_code(ErrorKind::internal) == 70);
  std::set<int> codes;
  for (ErrorKind kind : kAll) codes.insert(exit_code(kind));
  CHECK(codes.size() == std::size(kAll));
  CHECK(codes.count(0) == 0);
  CHECK(codes.count(1) == 0);
}

TEST_CASE("stages: bad input is usage; a missing compiler is the compile stage", "[unit][error]") {
  CHECK(std::string(stage_name(ErrorKind::input)) == "usage");
  CHECK(std::string(stage_name(ErrorKind::output)) == "usage");
  CHECK(std::string(stage_name(ErrorKind::compiler_missing)) == "compile");
  CHECK(std::string(stage_name(ErrorKind::link_failed)) == "link");
  for (ErrorKind kind : kAll)
    CHECK(std::string(stage_of_exit_code(exit_code(kind))) == stage_name(kind));
  CHECK(std::string(stage_of_exit_code(0)).empty());
  CHECK(std::string(stage_of_exit_code(1)).empty());
}

TEST_CASE("an Error carries its kind, message and detail", "[unit][error]") {
  Error e(ErrorKind::config, "x.json:1:2: bad", "more lines");
  CHECK(e.kind() == ErrorKind::config);
  CHECK(std::string(e.what()) == "x.json:1:2: bad");
  CHECK(e.detail() == "more lines");
  CHECK(Error(ErrorKind::usage, "u").detail().empty());
}

TEST_CASE("a Result's failure carries the kind of the Error it ends a command with",
          "[unit][error]") {
  Status plain = Failure{"no cache"};
  CHECK(plain.why() == "no cache");
  CHECK(plain.kind() == ErrorKind::internal);
  Result<int> kinded = Failure{"--report r.json is also a source", ErrorKind::usage};
  REQUIRE_FALSE(kinded);
  CHECK(kinded.kind() == ErrorKind::usage);
  Error e = kinded.error();
  CHECK(e.kind() == ErrorKind::usage);
  CHECK(std::string(e.what()) == "--report r.json is also a source");
  CHECK(ok());
}
