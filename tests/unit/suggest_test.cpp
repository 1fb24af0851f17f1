#include "util/text.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

TEST_CASE("edit_distance counts inserts, deletes, substitutions and swaps", "[suggest]") {
  CHECK(edit_distance("device", "device") == 0);
  CHECK(edit_distance("devce", "device") == 1);   // a letter dropped
  CHECK(edit_distance("devcie", "device") == 1);  // two letters swapped
  CHECK(edit_distance("npuu", "npu") == 1);
  CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("closest_match suggests only what is one typo (per four letters) away", "[suggest]") {
  std::vector<std::string> devices{"cpu", "cuda", "xpu", "mps", "npu"};
  CHECK(closest_match("npuu", devices) == "npu");
  CHECK(closest_match("cdua", devices) == "cuda");
  CHECK_FALSE(closest_match("tpuxyz", devices));
  CHECK_FALSE(closest_match("tpu", devices));  // short: may be a device of its own
  std::vector<std::string> options{"--device", "--dry-run", "--debug"};
  CHECK(closest_match("--devce", options) == "--device");
  CHECK_FALSE(closest_match("--frobnicate", options));
}
