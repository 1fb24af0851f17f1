// probe_library, the load check's child side, on a library every system
// has (libm): no kernel is built here.
#include "run/load_check.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;

TEST_CASE("a library that loads with every symbol asked for", "[unit][library_probe]") {
  std::string message;
  CHECK(probe_library("libm.so.6", {"cos", "sin"}, message) == 0);
  CHECK(message.empty());
  CHECK(probe_library("libm.so.6", {}, message) == 0);
}

TEST_CASE("each missing symbol is one line", "[unit][library_probe]") {
  std::string message;
  CHECK(probe_library("libm.so.6", {"cos", "no_such_a", "no_such_b"}, message) == 1);
  CHECK(message == "missing symbol: no_such_a\nmissing symbol: no_such_b");
}

TEST_CASE("a library that does not load: the loader's reason", "[unit][library_probe]") {
  kbuild_test::TempDir tmp;
  kbuild_test::write_file(tmp / "fake.so", "not an ELF file");
  std::string message;
  CHECK(probe_library(tmp / "fake.so", {"f"}, message) == 1);
  CHECK_THAT(message, Catch::Contains(tmp / "fake.so"));
  message.clear();
  CHECK(probe_library(tmp / "missing.so", {}, message) == 1);
  CHECK_THAT(message, Catch::Contains("missing.so"));
}
