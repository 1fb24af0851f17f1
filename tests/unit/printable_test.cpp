// printable_line: one line of valid UTF-8 whatever bytes a path holds.
#include "util/text.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

TEST_CASE("control characters are escaped; text and backslashes stay", "[unit][printable]") {
  CHECK(printable_line("plain /path/k.cpp") == "plain /path/k.cpp");
  CHECK(printable_line("a\nb\tc\rd") == "a\\nb\\tc\\rd");
  CHECK(printable_line(std::string("nul\0esc\x1b[31m\x7f", 13)) == "nul\\x00esc\\x1b[31m\\x7f");
  CHECK(printable_line("back\\slash") == "back\\slash");
  CHECK(printable_line("") == "");
}

TEST_CASE("valid UTF-8 stays; invalid bytes are escaped one by one", "[unit][printable]") {
  CHECK(printable_line("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(printable_line("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable_line("\xc3") == "\\xc3");                             // cut short
  CHECK(printable_line("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(printable_line("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a surrogate
  CHECK(printable_line("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST_CASE("C1 control characters are escaped too: U+009B starts a terminal sequence",
          "[unit][printable]") {
  // U+0085 (next line) and U+009B (CSI) are valid UTF-8 but control characters.
  CHECK(printable_line("a\xc2\x85z") == "a\\xc2\\x85z");
  CHECK(printable_line("\xc2\x9b"
                       "31m") == "\\xc2\\x9b31m");
  CHECK(printable_line("\xc2\xa0") == "\xc2\xa0");  // U+00A0 is text
}

TEST_CASE("utf8_sequence_length: the length of a valid sequence, else 0", "[unit][printable]") {
  CHECK(utf8_sequence_length("\xc3\xa9", 0) == 2);
  CHECK(utf8_sequence_length("\xe2\x82\xac", 0) == 3);
  CHECK(utf8_sequence_length("\xf0\x9f\x98\x80", 0) == 4);
  CHECK(utf8_sequence_length("x\xc3\xa9", 1) == 2);
  CHECK(utf8_sequence_length("a", 0) == 0);  // ASCII is not a multi-byte sequence
  CHECK(utf8_sequence_length("\x80", 0) == 0);
  CHECK(utf8_sequence_length("\xe0\x80\x80", 0) == 0);  // overlong
  CHECK(utf8_sequence_length("\xe2\x82", 0) == 0);      // cut short
  CHECK(utf8_sequence_length("\xe2\x28\xa1", 0) == 0);  // bad continuation
}
