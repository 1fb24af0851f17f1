// One key for every entry point: each input the compiler and linker read
// that a key or manifest once left out, changed after the entry was stored,
// in a plain build and in compiler mode (kbuild cc) alike. The built
// library's value (dlopen) or a miss shows the change was seen.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "../support/kernel_case.hpp"
#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

using Mode = KernelMode;
using Case = KernelCase;

bool key_hit(const RunResult& r) {
  return cache_hit(r);
}

const char* mode_name(Mode m) {
  return kernel_mode_name(m);
}

}  // namespace

TEST_CASE("relative include dirs: a header added to an earlier one is a miss", "[e2e][key]") {
  for (Mode mode : {Mode::build, Mode::cc}) {
    INFO(mode_name(mode));
    Case k(mode);
    write_file(k.dir / "inc/h.h", "#define VALUE 1\n");
    fs::create_directories(k.dir / "early");
    write_file(k.dir / "k.cpp", "#include <h.h>\nextern \"C\" int f() { return VALUE; }\n");
    const std::vector<std::string> flags{"-I", "early", "-I", "inc"};
    k.build(flags);
    CHECK(key_hit(k.build(flags)));
    k.rewrite("early/h.h", "#define VALUE 2\n");
    CHECK_FALSE(key_hit(k.build(flags)));
    CHECK(k.value() == 2);
  }
}

TEST_CASE("__has_include false when stored: the header created later is a miss", "[e2e][key]") {
  for (Mode mode : {Mode::build, Mode::cc}) {
    INFO(mode_name(mode));
    Case k(mode);
    fs::create_directories(k.dir / "inc");
    write_file(
        k.dir / "k.cpp",
        "#if __has_include(\"opt.h\")\n#include \"opt.h\"\n#elif __has_include(<sys_opt.h>)\n"
        "#include <sys_opt.h>\n#else\n#define VALUE 1\n#endif\n"
        "extern \"C\" int f() { return VALUE; }\n");
    const std::vector<std::string> flags{"-I", "inc"};
    k.build(flags);
    CHECK(k.value() == 1);
    CHECK(key_hit(k.build(flags)));
    k.rewrite("inc/sys_opt.h", "#define VALUE 3\n");  // found through -I
    CHECK_FALSE(key_hit(k.build(flags)));
    CHECK(k.value() == 3);
    CHECK(key_hit(k.build(flags)));
    k.rewrite("opt.h", "#define VALUE 2\n");  // beside the source, asked first
    CHECK_FALSE(key_hit(k.build(flags)));
    CHECK(k.value() == 2);
    fs::remove(k.dir / "opt.h");  // gone again: the entry that found it does not serve
    CHECK_FALSE(key_hit(k.build(flags)));
    CHECK(k.value() == 3);
  }
}

TEST_CASE(".incbin through an asm statement: never served stale", "[e2e][key]") {
  for (Mode mode : {Mode::build, Mode::cc}) {
    INFO(mode_name(mode));
    Case k(mode);
    write_file(k.dir / "data.bin", "A");
    write_file(k.dir / "k.cpp",
               "asm(\".section .rodata\\n.globl kb_blob\\nkb_blob: .incbin \\\"data.bin\\\"\\n"
               ".previous\");\nextern \"C\" const char kb_blob[];\n"
               "extern \"C\" int f() { return kb_blob[0]; }\n");
    k.build({});
    CHECK(k.value() == 'A');
    // The assembler was seen to read data.bin: cached, and keyed on it.
    CHECK(key_hit(k.build({})));
    k.rewrite("data.bin", "B");
    CHECK_FALSE(key_hit(k.build({})));
    CHECK(k.value() == 'B');
  }
}

TEST_CASE("__DATE__ and __TIME__: not cached unless SOURCE_DATE_EPOCH fixes them", "[e2e][key]") {
  for (Mode mode : {Mode::build, Mode::cc}) {
    INFO(mode_name(mode));
    Case k(mode);
    write_file(k.dir / "k.cpp",
               "extern \"C\" const char* when() { return __DATE__ \" \" __TIME__; }\n"
               "extern \"C\" int f() { return 1; }\n");
    k.build({});
    RunResult again = k.build({});
    CHECK_FALSE(key_hit(again));
    CHECK(again.err.find("uses __DATE__, __TIME__") != std::string::npos);
    const std::map<std::string, std::string> fixed{{"SOURCE_DATE_EPOCH", "1700000000"}};
    k.build({}, fixed);
    CHECK(key_hit(k.build({}, fixed)));
  }
}

TEST_CASE("compiler mode stamps the libraries a link reads: -l, -l:, -Wl,-l, LIBRARY_PATH",
          "[e2e][key]") {
  Case k(Mode::cc);
  auto archive = [&k](int value) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    write_file(k.dir / "g.cpp", "extern \"C\" int g() { return " + std::to_string(value) + "; }\n");
    REQUIRE(run({"/usr/bin/g++", "-fPIC", "-c", k.dir / "g.cpp", "-o", k.dir / "g.o"}).exit_code ==
            0);
    fs::remove(k.dir / "lib/libkbfoo.a");
    fs::create_directories(k.dir / "lib");
    REQUIRE(run({"/usr/bin/ar", "rcs", k.dir / "lib/libkbfoo.a", k.dir / "g.o"}).exit_code == 0);
  };
  write_file(k.dir / "k.cpp", "extern \"C\" int g();\nextern \"C\" int f() { return g(); }\n");
  int value = 1;
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"-Llib", "-lkbfoo"},
           {"-L", "lib", "-l", "kbfoo"},
           {"-Llib", "-l:libkbfoo.a"},
           {"-Llib", "-Wl,-lkbfoo"},
           {"-Wl,--whole-archive", "-Llib", "-lkbfoo", "-Wl,--no-whole-archive"}}) {
    INFO(flags[0] + " " + flags[1]);
    archive(value);
    k.build(flags);
    CHECK(k.value() == value);
    CHECK(key_hit(k.build(flags)));
    archive(++value);
    CHECK_FALSE(key_hit(k.build(flags)));
    CHECK(k.value() == value);
  }
  const std::map<std::string, std::string> env{{"LIBRARY_PATH", k.dir / "lib"}};
  archive(++value);
  k.build({"-lkbfoo"}, env);
  CHECK(key_hit(k.build({"-lkbfoo"}, env)));
  archive(++value);
  CHECK_FALSE(key_hit(k.build({"-lkbfoo"}, env)));
  CHECK(k.value() == value);
}

TEST_CASE("files the linker reads: version scripts, dynamic lists, -Wl,@file", "[e2e][key]") {
  Case k(Mode::cc);
  write_file(k.dir / "k.cpp",
             "extern \"C\" int g() { return 2; }\nextern \"C\" int f() { return 1; }\n");
  write_file(k.dir / "v.map", "{ global: f; local: *; };\n");
  write_file(k.dir / "d.list", "{ f; };\n");
  write_file(k.dir / "args", "--version-script=v.map\n");
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"-Wl,--version-script=v.map"},
                                             {"-Wl,--version-script,v.map"},
                                             {"-Xlinker", "--version-script=v.map"},
                                             {"-Wl,--dynamic-list=d.list"},
                                             {"-Wl,@args"}}) {
    INFO(flags[0]);
    k.build(flags);
    CHECK(key_hit(k.build(flags)));
    k.rewrite("v.map", "{ global: f; g; local: *; };\n");
    k.rewrite("d.list", "{ f; g; };\n");
    CHECK_FALSE(key_hit(k.build(flags)));
    write_file(k.dir / "v.map", "{ global: f; local: *; };\n");
    write_file(k.dir / "d.list", "{ f; };\n");
  }
}

TEST_CASE("programs the driver runs from elsewhere: COMPILER_PATH, GCC_EXEC_PREFIX, -B",
          "[e2e][key]") {
  // The driver looks for as, collect2 and ld there first: the paths it
  // found empty are recorded, so a program placed there later is a miss,
  // and the build runs it.
  for (Mode mode : {Mode::build, Mode::cc}) {
    INFO(mode_name(mode));
    for (const std::string how : {"COMPILER_PATH", "-B"}) {
      INFO(how);
      if (how == "-B" && mode == Mode::build) continue;  // compiler mode's option only
      Case k(mode);
      write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
      fs::create_directories(k.dir / "progs");
      const std::map<std::string, std::string> env =
          how == "-B" ? std::map<std::string, std::string>{}
                      : std::map<std::string, std::string>{{"COMPILER_PATH", k.dir / "progs/"}};
      const std::vector<std::string> flags = how == "-B"
                                                 ? std::vector<std::string>{"-B" + k.dir / "progs/"}
                                                 : std::vector<std::string>{};
      k.build(flags, env);
      CHECK(key_hit(k.build(flags, env)));
      // An assembler that leaves a mark, then is the real one.
      write_file(
          k.dir / "progs/as",
          "#!/bin/sh\necho ran > \"" + k.dir / "progs/as-ran" + "\"\nexec /usr/bin/as \"$@\"\n",
          true);
      CHECK_FALSE(key_hit(k.build(flags, env)));
      CHECK(fs::exists(k.dir / "progs/as-ran"));
    }
    Case k(mode);
    write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
    const std::map<std::string, std::string> env{{"GCC_EXEC_PREFIX", "/usr/lib/gcc/"}};
    k.build({}, env);
    CHECK(key_hit(k.build({}, env)));
    CHECK_FALSE(key_hit(k.build({})));  // the variable's value was read: another entry
  }
}
