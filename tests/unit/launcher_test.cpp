// Launchers: parsed like a shell would, known compile-only ones recognised;
// what -march=native means read from the compiler's -### output (here a
// fake compiler script: no g++ runs).
#include "plan/plan.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
using Strings = std::vector<std::string>;

TEST_CASE("parse_launcher: words split like a shell, the program's file name", "[unit][launcher]") {
  Launcher none = parse_launcher("");
  CHECK(none.argv.empty());
  CHECK(none.name() == "");
  CHECK_FALSE(none.split);
  Launcher wrapped = parse_launcher("/opt/my tools/wrap 'a b' --x=\"1 2\"");
  CHECK(wrapped.argv == Strings{"/opt/my", "tools/wrap", "a b", "--x=1 2"});
  CHECK(parse_launcher("'/opt/my tools/wrap' -v").name() == "wrap");
  CHECK_FALSE(wrapped.split);
  CHECK_FALSE(wrapped.distributes);
  CHECK_FALSE(wrapped.resolve_native);
}

TEST_CASE("ccache and sccache compile only; distcc, icecc and pump also distribute",
          "[unit][launcher]") {
  for (const char* text : {"ccache", "/usr/bin/ccache", "sccache --flag"}) {
    Launcher l = parse_launcher(text);
    CHECK(l.split);
    CHECK_FALSE(l.distributes);
  }
  for (const char* text : {"distcc", "/usr/lib/icecc/bin/icecc", "pump distcc"}) {
    Launcher l = parse_launcher(text);
    CHECK(l.split);
    CHECK(l.distributes);
  }
  // Only the program counts, not an argument or a look-alike name.
  CHECK_FALSE(parse_launcher("env ccache").split);
  CHECK_FALSE(parse_launcher("ccache-wrapper").split);
}

TEST_CASE("an unbalanced quote is a usage error naming the text", "[unit][launcher]") {
  try {
    (void)parse_launcher("ccache 'oops");
    FAIL("accepted an unbalanced quote");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()) == "--launcher 'ccache 'oops' has an unbalanced quote");
  }
}

TEST_CASE("resolve_native_flags: -march and the -m and --param words after it on cc1's line",
          "[unit][launcher]") {
  TempDir tmp;
  write_file(
      tmp / "g++",
      "#!/bin/sh\n"
      "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\n"
      "echo 'Using built-in specs.' >&2\n"
      "echo ' \"/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus\" \"-E\" \"-quiet\" \"-mmmx-before\" "
      "\"-\" \"-march=skylake\" \"-mmmx\" \"-mno-3dnow\" \"--param=l1-cache-size=32\" "
      "\"-mtune=skylake\" \"-dumpbase\" \"null\"' >&2\n"
      "echo ' \"/usr/bin/as\" \"-march=other\"' >&2\n",
      true);
  Environment env;
  Strings flags = resolve_native_flags(tmp / "g++", env);
  CHECK(flags == Strings{"-march=skylake", "-mmmx", "-mno-3dnow", "--param=l1-cache-size=32",
                         "-mtune=skylake"});
  CHECK(read_file(tmp / "args") == "-###\n-march=native\n-E\n-x\nc++\n/dev/null\n");
}

TEST_CASE("resolve_native_flags: nothing when the compiler says nothing usable",
          "[unit][launcher]") {
  TempDir tmp;
  write_file(tmp / "silent", "#!/bin/sh\nexit 1\n", true);
  CHECK(resolve_native_flags(tmp / "silent", Environment()).empty());
  write_file(tmp / "broken", "#!/bin/sh\necho ' cc1plus \"-march=x' >&2\n", true);
  CHECK(resolve_native_flags(tmp / "broken", Environment()).empty());
}
