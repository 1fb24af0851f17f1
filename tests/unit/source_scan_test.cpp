// source_scan: the clock, .incbin and __has_include as the compiler would
// see them (comments and messages ask nothing), and where a probed name
// must stay absent or present.
#include "run/cache_key.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

TEST_CASE("the clock and .incbin are found in code, not in comments or messages",
          "[unit][source_scan]") {
  TempDir d;
  write_file(d / "uses.h", "const char* built = __DATE__ \" \" __TIME__;\n");
  write_file(d / "stamp.h", "#define WHEN __TIMESTAMP__\n");
  write_file(d / "comment.h",
             "// built on __DATE__\n/* __TIME__ */\nconst char* m = \"__DATE__ in a message\";\n"
             "int __DATE__x = 1; int my__TIME__ = 2;\n");
  write_file(d / "asm.cpp", "asm(\".incbin \\\"blob.bin\\\"\");\n");
  write_file(d / "asm_comment.cpp", "// .incbin is how one would embed it\nint x;\n");
  CHECK(scan_sources({d / "uses.h"}).uses_clock == d / "uses.h");
  CHECK(scan_sources({d / "stamp.h"}).uses_clock == d / "stamp.h");
  CHECK(scan_sources({d / "comment.h"}).uses_clock.empty());
  CHECK(scan_sources({d / "comment.h", d / "uses.h"}).uses_clock == d / "uses.h");
  CHECK(scan_sources({d / "asm.cpp"}).incbin == d / "asm.cpp");
  CHECK(scan_sources({d / "asm_comment.cpp"}).incbin.empty());
  CHECK(scan_sources({d / "missing.h"}).uses_clock.empty());  // the manifest refuses it
}

TEST_CASE("__has_include probes: quoted, bracketed, _next, spaced; not comments or macros",
          "[unit][source_scan]") {
  TempDir d;
  write_file(d / "p.h",
             "#if __has_include(\"a.h\")\n#endif\n#if __has_include ( <sys/b.h> )\n#endif\n"
             "#if __has_include_next(<c.h>)\n#endif\n// __has_include(\"comment.h\")\n"
             "#if __has_include(MACRO_NAME)\n#endif\n");
  SourceScan scan = scan_sources({d / "p.h"});
  REQUIRE(scan.probes.size() == 3);
  CHECK(scan.probes[0].name == "a.h");
  CHECK(scan.probes[0].quoted);
  CHECK(scan.probes[0].from == d / "p.h");
  CHECK(scan.probes[1].name == "sys/b.h");
  CHECK_FALSE(scan.probes[1].quoted);
  CHECK(scan.probes[2].name == "c.h");
}

TEST_CASE("a probed name is absent up to where it is found, and present there",
          "[unit][source_scan]") {
  TempDir d;
  write_file(d / "two/x.h", "");
  write_file(d / "src/q.h", "");
  std::vector<HasIncludeProbe> probes{{"x.h", false, d / "src/k.cpp"},
                                      {"q.h", true, d / "src/k.cpp"},
                                      {"none.h", false, d / "src/k.cpp"}};
  ProbeRecords r = probe_records(probes, {d / "one", d / "two", d / "three"});
  CHECK(r.absent == std::vector<std::string>{d / "one/x.h", d / "one/none.h", d / "two/none.h",
                                             d / "three/none.h"});
  CHECK(r.present == std::vector<std::string>{d / "two/x.h", d / "src/q.h"});
}
