#include <catch2/catch.hpp>

#include "util/text.hpp"

using namespace kbuild;
using Words = std::vector<std::string>;

TEST_CASE("shell_quote leaves safe words alone and quotes the rest", "[unit][shell]") {
  CHECK(shell_quote("-I/usr/include") == "-I/usr/include");
  CHECK(shell_quote("-DX=1,2") == "-DX=1,2");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\"'\"'s'");
  CHECK(shell_quote("$HOME") == "'$HOME'");
}

TEST_CASE("shell_split follows POSIX rules like Python's shlex.split", "[unit][shell]") {
  CHECK(shell_split("a  b\tc\n") == Words{"a", "b", "c"});
  CHECK(shell_split(" USE_CUDA") == Words{"USE_CUDA"});
  CHECK(shell_split("") == Words{});
  CHECK(shell_split("'a b' \"c d\"") == Words{"a b", "c d"});
  CHECK(shell_split("x'y'\"z\"") == Words{"xyz"});
  CHECK(shell_split(R"("a\"b\\c\$d\e")") == Words{R"(a"b\c$d\e)"});
  CHECK(shell_split(R"(a\ b)") == Words{"a b"});
  CHECK(shell_split("''") == Words{""});
  CHECK(shell_split("-DBUILD_LIBTORCH=ON -Wno-unused-function") ==
        Words{"-DBUILD_LIBTORCH=ON", "-Wno-unused-function"});
}

TEST_CASE("shell_split rejects unbalanced quotes and a trailing backslash", "[unit][shell]") {
  CHECK_FALSE(shell_split("'open").has_value());
  CHECK_FALSE(shell_split("\"open").has_value());
  CHECK_FALSE(shell_split("end\\").has_value());
}

TEST_CASE("shell_join output splits back into exactly the same words", "[unit][shell]") {
  Words words{"g++", "/tmp/my dir/k.cpp", "-I/a'b",    "-DX=\"q\"",   "$(rm -rf ~)", "; ls",
              "",    "tab\there",         "new\nline", "back\\slash", "*.cpp",       "~user",
              "a#b"};
  auto back = shell_split(shell_join(words));
  REQUIRE(back.has_value());
  CHECK(*back == words);
}
