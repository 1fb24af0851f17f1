// The clock scan: __DATE__, __TIME__ and __TIMESTAMP__ as the compiler would
// see them (comments and messages ask nothing), in the text files a build
// read; programs, libraries and FIFOs are never scanned.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "run/cache_key.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

TEST_CASE("the clock is found in code, not in comments or messages", "[unit][source_scan]") {
  TempDir d;
  write_file(d / "uses.h", "const char* built = __DATE__ \" \" __TIME__;\n");
  write_file(d / "stamp.h", "#define WHEN __TIMESTAMP__\n");
  write_file(d / "comment.h",
             "// built on __DATE__\n/* __TIME__ */\nconst char* m = \"__DATE__ in a message\";\n"
             "int __DATE__x = 1; int my__TIME__ = 2;\n");
  CHECK(clock_user(kbuild::system_file_system(), {d / "uses.h"}) == d / "uses.h");
  CHECK(clock_user(kbuild::system_file_system(), {d / "stamp.h"}) == d / "stamp.h");
  CHECK(clock_user(kbuild::system_file_system(), {d / "comment.h"}).empty());
  CHECK(clock_user(kbuild::system_file_system(), {d / "comment.h", d / "uses.h"}) == d / "uses.h");
  CHECK(clock_user(kbuild::system_file_system(), {d / "missing.h"})
            .empty());  // the manifest refuses it
}

TEST_CASE("libraries and FIFOs the toolchain read are not scanned", "[unit][source_scan]") {
  TempDir d;
  write_file(d / "lib.so", std::string("\x7f"
                                       "ELF\x02\x01\0\0 __DATE__\n",
                                       18));
  write_file(d / "lib.a", std::string("!<arch>\n\0__DATE__\n", 18));
  write_file(d / "k.h.gch", std::string("gpch\0\0\0\x01 __DATE__ __TIME__", 26));
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);  // opened, the scan would block
  CHECK(clock_user(kbuild::system_file_system(),
                   {d / "lib.so", d / "lib.a", d / "k.h.gch", d / "fifo"})
            .empty());
}

// The scan reads a file once: its first 8 KiB decide text or not, the rest
// is read on from there.
TEST_CASE("the clock is found past a header's first 8 KiB, among underscores",
          "[unit][source_scan]") {
  TempDir d;
  const std::string underscores(20000, '_');
  write_file(d / "long.h", "// " + underscores + "\nint x = 1;\n" + std::string(9000, ' ') +
                               "const char* t = __TIME__;\n");
  write_file(d / "plain.h", "// " + underscores + "\nint __y = 1;\n");
  CHECK(clock_user(kbuild::system_file_system(), {d / "plain.h", d / "long.h"}) == d / "long.h");
  CHECK(clock_user(kbuild::system_file_system(), {d / "plain.h"}).empty());
}
