#include "util/text.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

TEST_CASE("parse_size: units are powers of 1024; nonsense and out of range are refused",
          "[byte_size]") {
  CHECK(parse_size("1048576") == 1048576u);
  CHECK(parse_size("500M") == 500ull << 20);
  CHECK(parse_size("4G") == 4ull << 30);
  CHECK(parse_size("1.5K") == 1536u);
  for (const char* bad : {"", "12Q", "-1M", "nan", "inf", "1e30", "2000T", "M"}) {
    INFO(bad);
    CHECK_FALSE(parse_size(bad));
  }
}

TEST_CASE("human_size: bytes below 1 KiB, else one decimal and a binary unit", "[byte_size]") {
  CHECK(human_size(0) == "0 B");
  CHECK(human_size(1023) == "1023 B");
  CHECK(human_size(1536) == "1.5 KiB");
  CHECK(human_size(500ull << 20) == "500.0 MiB");
  CHECK(human_size(4ull << 30) == "4.0 GiB");
}
