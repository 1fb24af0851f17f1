// The record of what a build read: the dependency list's paths, and a
// manifest of files (size, mtime, SHA-1) that holds while each is unchanged.
#include "run/input_manifest.hpp"

#include <catch2/catch.hpp>
#include <ctime>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

struct timespec now() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

// Answers with fixed output and records what it was asked.

}  // namespace

TEST_CASE("parse_depfile: the paths after the first colon, continuations and escaped blanks",
          "[unit][input_manifest]") {
  CHECK(parse_depfile("k.o: k.cpp a.h\n") == Strings{"k.cpp", "a.h"});
  CHECK(parse_depfile("k.o: k.cpp \\\n  /x/a.h\t/y/b.h \\\n /z/c.h\n") ==
        Strings{"k.cpp", "/x/a.h", "/y/b.h", "/z/c.h"});
  CHECK(parse_depfile("k.o: /a\\ b/c.h d.h") == Strings{"/a b/c.h", "d.h"});
  CHECK(parse_depfile("k.o:\n k.cpp\n") == Strings{"k.cpp"});
  CHECK(parse_depfile("").empty());
  CHECK(parse_depfile("no rule here").empty());
  CHECK(parse_depfile("k.o: ").empty());
}

TEST_CASE("a manifest holds while each file keeps its stamp or its content",
          "[unit][input_manifest]") {
  TempDir tmp;
  write_file(tmp / "a.h", "one");
  write_file(tmp / "b.h", "two");
  Result<std::string> manifest = input_manifest({tmp / "a.h", tmp / "b.h"}, now());
  REQUIRE(manifest);
  CHECK(inputs_unchanged(*manifest));
  // Touched but the same bytes: still holds.
  fs::last_write_time(tmp / "a.h", fs::file_time_type::clock::now() + std::chrono::hours(1));
  CHECK(inputs_unchanged(*manifest));
  // The same size, other bytes.
  write_file(tmp / "b.h", "TWO");
  CHECK_FALSE(inputs_unchanged(*manifest));
  write_file(tmp / "b.h", "two");
  CHECK(inputs_unchanged(*manifest));
  fs::remove(tmp / "a.h");
  CHECK_FALSE(inputs_unchanged(*manifest));

  CHECK(inputs_unchanged(*input_manifest({}, now())));
  CHECK_FALSE(inputs_unchanged(""));
  CHECK_FALSE(inputs_unchanged("\xa1\x66inputs\x05"));  // CBOR {"inputs": 5}
  CHECK_FALSE(inputs_unchanged(std::string("garbage")));
}

TEST_CASE("input_manifest refuses a file changed after the build started, or missing",
          "[unit][input_manifest]") {
  TempDir tmp;
  const struct timespec started = now();
  write_file(tmp / "late.h", "x");  // written after `started`
  fs::last_write_time(tmp / "late.h", fs::file_time_type::clock::now() + std::chrono::hours(1));
  Result<std::string> late = input_manifest({tmp / "late.h"}, started);
  REQUIRE_FALSE(late);
  CHECK(late.why() == tmp / "late.h" + " changed during the build");
  Result<std::string> missing = input_manifest({tmp / "missing.h"}, now());
  REQUIRE_FALSE(missing);
  CHECK(missing.why() == tmp / "missing.h" + " cannot be read");
}
