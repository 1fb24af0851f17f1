#include <catch2/catch.hpp>

#include "util/text.hpp"

using namespace kbuild;
using Words = std::vector<std::string>;

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

// printable_line: one line of valid UTF-8 whatever bytes a path holds.
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

// redact: what every message, report and listing shows of a secret.
TEST_CASE("a URL's whole userinfo is masked, wherever it sits in a text", "[unit][redact]") {
  CHECK(redact_urls("redis://:pw@cache:6379/2") == "redis://***@cache:6379/2");
  CHECK(redact_urls("redis://user:pw@cache") == "redis://***@cache");
  CHECK(redact_urls("redis://PASSWORD@cache") == "redis://***@cache");  // the colon forgotten
  CHECK(redact_urls("redis://u:p@ss/w@rd@cache:1") == "redis://***@cache:1");  // last '@'
  CHECK(redact_urls("redis://cache:6379") == "redis://cache:6379");
  CHECK(redact_urls("unix:///run/redis.sock?db=2") == "unix:///run/redis.sock?db=2");
  CHECK(redact_urls("--remote-cache=redis://:pw@h:1") == "--remote-cache=redis://***@h:1");
  CHECK(redact_urls("remote cache 'redis://:a@h' and \"https://t:k@example.com/x\" failed") ==
        "remote cache 'redis://***@h' and \"https://***@example.com/x\" failed");
  CHECK(redact_urls("two: redis://:a@h redis://:b@i") == "two: redis://***@h redis://***@i");
  CHECK(redact_urls("no scheme user@host: kept") == "no scheme user@host: kept");
  CHECK(redact_urls("") == "");
  CHECK(redact_urls("ends in ://") == "ends in ://");
  CHECK(redact_urls("ends in ://@") == "ends in ://***@");
}

TEST_CASE("keys, passwords and tokens are shown as set, other values with URLs masked",
          "[unit][redact]") {
  for (const char* name : {"KBUILD_REMOTE_CACHE_SIGNING_KEY", "KBUILD_REMOTE_CACHE_VERIFY_KEY",
                           "REDIS_PASSWORD", "CI_JOB_TOKEN", "MY_SECRET"})
    CHECK(shown_value(name, "abc123") == "set");
  CHECK_FALSE(is_secret_variable("KBUILD_REMOTE_CACHE"));
  CHECK(shown_value("KBUILD_REMOTE_CACHE", "redis://:pw@h:1") == "redis://***@h:1");
  CHECK(shown_value("PATH", "/usr/bin:/bin") == "/usr/bin:/bin");
}

TEST_CASE("an address is read whole: its userinfo runs to the last '@', blanks and all",
          "[unit][redact]") {
  // As the client reads it: AUTH gets "correct horse", so none of it is shown.
  CHECK(redact_address("redis://:correct horse@cache:6379") == "redis://***@cache:6379");
  CHECK(redact_address("redis://user:a b/c:d@e@[::1]:1/2") == "redis://***@[::1]:1/2");
  CHECK(redact_address("redis://cache:6379/2") == "redis://cache:6379/2");
  // Mistyped: what looks like a scheme is kept, what follows it to the last '@' hidden.
  CHECK(redact_address("redis:/:PW@cache:1") == "redis:/***@cache:1");
  CHECK(redact_address("redis:/:Pa/ss@h:1") == "redis:/***@h:1");
  CHECK(redact_address("redis:PW@cache:1") == "redis:***@cache:1");
  CHECK(redact_address("rediss://:PW@cache:1") == "rediss://***@cache:1");
  CHECK(redact_address("REDIS:///:PW@cache:1") == "REDIS://***@cache:1");
  CHECK(redact_address(":PW@cache:1") == "***@cache:1");
  CHECK(redact_address(" redis://:PW@cache:1") == "***@cache:1");
  CHECK(redact_address("1redis://:PW@cache:1") == "***@cache:1");
  // Any URL-like address the same way (a later HTTP backend's too).
  CHECK(redact_address("https://user:p w@cache.example/v1/x") == "https://***@cache.example/v1/x");
  CHECK(redact_address("http://cache.example/a@b") == "http://***@b");  // more hidden, never less
  // unix:///PATH has no userinfo: its path is shown whole; one that does not
  // parse hides the same part as any other.
  CHECK(redact_address("unix:///run/a@b/redis.sock?db=2") == "unix:///run/a@b/redis.sock?db=2");
  CHECK(redact_address("unix://:PW@/run/redis.sock") == "unix://***@/run/redis.sock");
  CHECK(redact_address("") == "");
  CHECK(redact_address("@") == "***@");
}

TEST_CASE("address_parts splits an address as the Redis client reads it", "[unit][redact]") {
  AddressParts parts = address_parts("redis://u:p w@h:1/2");
  CHECK(parts.scheme == "redis://");
  REQUIRE(parts.userinfo);
  CHECK(*parts.userinfo == "u:p w");
  CHECK(parts.rest == "h:1/2");
  parts = address_parts("redis:/:x@h");
  CHECK(parts.scheme == "redis:/");
  CHECK(parts.userinfo == std::string_view(":x"));
  parts = address_parts("unix:///s@ck");
  CHECK(parts.scheme == "unix://");
  CHECK_FALSE(parts.userinfo);
  CHECK(parts.rest == "/s@ck");
  parts = address_parts("host:6379");
  CHECK(parts.scheme == "host:");
  CHECK_FALSE(parts.userinfo);
}

TEST_CASE("a word or a value that is an address is read to its end", "[unit][redact]") {
  CHECK(redact_value("redis://:correct horse@h:1") == "redis://***@h:1");
  CHECK(redact_value("--remote-cache=redis://:correct horse@h:1") ==
        "--remote-cache=redis://***@h:1");
  CHECK(redact_value("redis:/:PW@h:1") == "redis:/***@h:1");
  CHECK(redact_value("-DURL=redis:PW@h") == "-DURL=redis:***@h");
  CHECK(redact_value("-Wl,-rpath,/opt/lib") == "-Wl,-rpath,/opt/lib");
  CHECK(redact_value("/usr/bin:/bin") == "/usr/bin:/bin");
  CHECK(redact_value("user@host") == "user@host");
  CHECK(redact_value("see redis://:pw@h") == "see redis://***@h");  // not an address: as text
  // A variable that holds an address is one, whatever it looks like.
  CHECK(shown_value("KBUILD_REMOTE_CACHE", "redis://:correct horse@h:1") == "redis://***@h:1");
  CHECK(shown_value("KBUILD_REMOTE_CACHE", ":PW@h:1") == "***@h:1");
  CHECK(shown_value("CACHE_URL", "h t@x") == "***@x");
  CHECK(shown_value("OTHER", "redis:/:PW@h:1") == "redis:/***@h:1");
}

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
