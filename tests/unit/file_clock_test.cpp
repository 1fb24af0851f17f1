// When a file counts as settled (util/file_clock.hpp): both its times at
// least the settle age old on the file clock, which tests move by hand.
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <chrono>

#include "../support/fake_file_clock.hpp"
#include "../support/test_support.hpp"
#include "util/file_clock.hpp"

using namespace kbuild;
using namespace kbuild_test;
using namespace std::chrono_literals;

namespace {

struct stat stated(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st;
}

}  // namespace

TEST_CASE("a file just written is not settled until the settle age has passed",
          "[unit][file-clock]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  CHECK_FALSE(file_clock().settled(stated(tmp / "f")));  // the system clock, two seconds
  FakeFileClock clock;
  CHECK_FALSE(file_clock().settled(stated(tmp / "f")));
  clock.advance(1500ms);
  CHECK_FALSE(file_clock().settled(stated(tmp / "f")));
  clock.advance(600ms);
  CHECK(file_clock().settled(stated(tmp / "f")));
  clock.rewind();
  CHECK_FALSE(file_clock().settled(stated(tmp / "f")));
}

TEST_CASE("a file dated back but changed just now is not settled: its inode change time counts",
          "[unit][file-clock]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  fs::last_write_time(tmp / "f", fs::file_time_type::clock::now() - std::chrono::hours(1));
  FakeFileClock clock;
  CHECK_FALSE(file_clock().settled(stated(tmp / "f")));
  clock.advance();
  CHECK(file_clock().settled(stated(tmp / "f")));
}

TEST_CASE(
    "a clock with no settle age takes every file as settled; the system clock is back after it",
    "[unit][file-clock]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  {
    FileClock immediate(0ns);
    ScopedFileClock installed(immediate);
    CHECK(file_clock().settled(stated(tmp / "f")));
  }
  CHECK_FALSE(file_clock().settled(stated(tmp / "f")));
}
