// plan_compiler_call: a compiler command taken as it is (kbuild cc), as one
// build kbuild can cache, or nullopt when it must run unchanged.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "plan/compiler_call.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

TEST_CASE("a shared library from sources: its output, sources and argv untouched",
          "[unit][compiler_call]") {
  const Strings argv{"/usr/bin/g++", "a.cpp",    "-I",  "inc",      "-O3",   "b.cc", "-shared",
                     "-fPIC",        "-D",       "X=1", "-lm",      "-L",    "lib",  "-o",
                     "k.so",         "-include", "p.h", "-Xlinker", "-zdefs"};
  auto call = plan_compiler_call(argv);
  REQUIRE(call);
  CHECK(call->plan.kind == OutputKind::shared_library);
  CHECK(call->plan.output == "k.so");
  CHECK(call->plan.command.argv == argv);
  CHECK(call->plan.command.output_index == 14);
  // Values of -I, -D, -L, -include, -Xlinker are not sources.
  CHECK(call->sources == Strings{"a.cpp", "b.cc"});
}

TEST_CASE("a compile to an object has exactly one source", "[unit][compiler_call]") {
  auto call = plan_compiler_call({"g++", "-c", "k.cpp", "-o", "k.o"});
  REQUIRE(call);
  CHECK(call->plan.kind == OutputKind::object);
  CHECK(call->sources == Strings{"k.cpp"});
  CHECK_FALSE(plan_compiler_call({"g++", "-c", "a.cpp", "b.cpp", "-o", "k.o"}));
}

TEST_CASE("what is not one checkable build runs as it is", "[unit][compiler_call]") {
  const std::vector<Strings> as_is{
      {"g++", "k.cpp", "-o", "k"},                              // a program
      {"g++", "-shared", "k.cpp"},                              // no -o
      {"g++", "-shared", "k.cpp", "-o"},                        // -o without a value
      {"g++", "-shared", "k.cpp", "-o", "a.so", "-o", "b.so"},  // two outputs
      {"g++", "-shared", "-o", "k.so"},                         // no input
      {"g++", "-shared", "k.cpp", "-ok.so"},                    // an attached -o
      {"g++", "-E", "k.cpp", "-o", "k.i"},
      {"g++", "-S", "-c", "k.cpp", "-o", "k.s"},
      {"g++", "-c", "k.cpp", "-MF", "d", "-o", "k.o"},  // a dependency file without -MD
      {"g++", "-c", "k.cpp", "-MD", "-MF", "a.d", "-MF", "b.d", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "-MD", "-MF", "/dev/null", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "-MD", "-MF", "k.cpp", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "-M", "-o", "k.d"},
      {"g++", "-c", "k.cpp", "-MM", "-MF", "k.d", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "-MD", "-MG", "-o", "k.o"},
      {"g++", "-shared", "k.cpp", "-MD", "-o", "k.so"},  // a link's
      {"g++", "-c", "-x", "c++", "k", "-o", "k.o"},
      {"g++", "-c", "-", "-o", "k.o"},
      {"g++", "--version"},
      {"g++", "-print-search-dirs"},
      {"g++", "-dumpversion"},
      {"g++", "-c", "k.cpp", "-save-temps", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "-Wp,-MD,d", "-o", "k.o"},
      {"g++"},
  };
  for (const Strings& argv : as_is) {
    INFO((argv.size() > 1 ? argv[1] + " ..." : "no arguments"));
    CHECK_FALSE(plan_compiler_call(argv));
  }
}

TEST_CASE("g++'s long spellings run as they are, but --compile is -c", "[unit][compiler_call]") {
  const std::vector<Strings> as_is{
      {"g++", "--preprocess", "k.cpp", "-o", "k.i"},
      {"g++", "--assemble", "k.cpp", "-o", "k.s"},
      {"g++", "-shared", "k.cpp", "-o", "a.so", "--output=b.so"},  // g++ would write b.so
      {"g++", "-shared", "k.cpp", "--output", "b.so"},
      {"g++", "-c", "--language", "c", "k.cpp", "-o", "k.o"},
      {"g++", "-c", "--language=c", "k.cpp", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "--write-dependencies", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "--write-user-dependencies", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "--dependencies", "-o", "k.o"},
      {"g++", "-c", "k.cpp", "--pre", "-o", "k.o"},  // an abbreviation
      {"g++", "-c", "k.cpp", "--sysroot=/opt/sys", "-o", "k.o"},
  };
  for (const Strings& argv : as_is) {
    INFO(argv[1] + " " + argv[2] + " " + argv[3]);
    CHECK_FALSE(plan_compiler_call(argv));
  }
  auto call = plan_compiler_call({"g++", "--compile", "k.cpp", "-o", "k.o"});
  REQUIRE(call);
  CHECK(call->plan.kind == OutputKind::object);
  CHECK(plan_compiler_call(
      {"g++", "-shared", "--param", "max-inline-insns-auto=10", "k.cpp", "-o", "k.so"}));
}

TEST_CASE("options that write files beside the output run as they are", "[unit][compiler_call]") {
  for (const char* option :
       {"--coverage", "-fprofile-arcs", "-ftest-coverage", "-fprofile-generate", "-fprofile-use=p",
        "-gsplit-dwarf", "-fstack-usage", "-fdump-tree-all", "-fdump-rtl-expand",
        "-fcallgraph-info", "-fcallgraph-info=su", "-save-temps=obj", "-fsave-optimization-record",
        "-Wl,-Map=k.map"}) {
    INFO(option);
    CHECK_FALSE(plan_compiler_call({"g++", "-c", "k.cpp", option, "-o", "k.o"}));
  }
  CHECK(plan_compiler_call({"g++", "-c", "k.cpp", "-g", "-O2", "-o", "k.o"}));
}

TEST_CASE("what a command reads is observed: response files, specs, plugins, -B, assembly",
          "[unit][compiler_call]") {
  for (const Strings& argv :
       std::vector<Strings>{{"g++", "-shared", "@args", "-o", "k.so"},
                            {"g++", "-c", "k.cpp", "-B/opt/bin", "-o", "k.o"},
                            {"g++", "-c", "k.cpp", "-specs=my.specs", "-o", "k.o"},
                            {"g++", "-c", "k.cpp", "-fplugin=p.so", "-o", "k.o"},
                            {"g++", "-c", "start.S", "-o", "start.o"},
                            {"g++", "-c", "start.s", "-o", "start.o"},
                            {"g++", "-c", "start.sx", "-o", "start.o"}}) {
    INFO(argv[2]);
    CHECK(plan_compiler_call(argv));
  }
}

TEST_CASE("an output that is not a regular file runs as it is", "[unit][compiler_call]") {
  CHECK_FALSE(plan_compiler_call({"g++", "-c", "k.cpp", "-o", "/dev/null"}));
  CHECK_FALSE(plan_compiler_call({"g++", "-c", "k.cpp", "-o", "/proc/self/fd/1"}));
  kbuild_test::TempDir dir;
  const std::string target = dir / "real.o", link = dir / "link.o";
  kbuild_test::write_file(target, "old");
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  CHECK_FALSE(plan_compiler_call({"g++", "-c", "k.cpp", "-o", link}));  // g++ writes through it
  CHECK(plan_compiler_call({"g++", "-c", "k.cpp", "-o", target}));
  CHECK(plan_compiler_call({"g++", "-c", "k.cpp", "-o", dir / "new.o"}));
}

TEST_CASE("side outputs in every spelling run as they are", "[unit][compiler_call]") {
  const std::vector<Strings> as_is{
      {"-Wa,-adhln=k.lst"},
      {"-Wa,--noexecstack,-al"},
      {"-Xassembler", "-adhln=k.lst"},
      {"-Wa,--MD,k.d"},
      {"-Xlinker", "-Map=k.map"},
      {"-Xlinker", "-Map", "-Xlinker", "k.map"},
      {"-Wl,--gc-sections,-Map=k.map"},
      {"-Wl,--dependency-file=k.d"},
      {"-Wl,-dependency-file=k.d"},  // ld takes one dash
      {"-Wl,--depend=k.d"},          // and abbreviations
      {"-Wl,--out-implib,k.a"},
      {"-Xlinker", "--out-implib", "-Xlinker", "k.a"},
      {"-Wl,-o,other.so"},
      {"-Xpreprocessor", "-MD"},
      {"-MJ", "k.json"},
      {"-fopt-info-vec-optimized=k.txt"},
      {"-fopt-info"},
      {"-da"},
      {"-dp"},
      {"-dumpbase", "k"},
      {"-MFk.d", "-MD"},  // a link's dependency file
      {"-MMD"},
      {"-fdiagnostics-format=json-file"},
      {"-ftime-trace"},
  };
  for (const Strings& words : as_is) {
    Strings argv{"g++", "-shared", "-fPIC", "k.cpp", "-o", "k.so"};
    argv.insert(argv.end(), words.begin(), words.end());
    INFO(words[0] + (words.size() > 1 ? " " + words[1] : ""));
    CHECK_FALSE(plan_compiler_call(argv));
  }
  // What Inductor's links pass still builds through the cache.
  CHECK(plan_compiler_call({"g++", "-shared", "-fPIC", "k.cpp", "-o", "k.so", "-Wl,--no-as-needed",
                            "-Wl,-rpath,/opt/torch/lib", "-Wl,-soname,k.so", "-Xlinker", "-zdefs",
                            "-Wl,-O1", "-Wa,--noexecstack", "-fdiagnostics-format=json"}));
}

TEST_CASE("-MD and -MMD compiles are one build with a dependency file, named and targeted",
          "[unit][compiler_call][depfile]") {
  // No -MF, no target: g++'s default file (the output's suffix made .d)
  // and target (the output, as -MQ quotes it), made explicit.
  auto call = plan_compiler_call({"g++", "-c", "k.cpp", "-MD", "-MP", "-o", "obj/k.cpp.o"});
  REQUIRE(call);
  CHECK(call->plan.depfile == "obj/k.cpp.d");
  CHECK(call->plan.command.argv == Strings{"g++", "-c", "k.cpp", "-MD", "-MP", "-o", "obj/k.cpp.o",
                                           "-MF", "obj/k.cpp.d", "-MQ", "obj/k.cpp.o"});
  CHECK(call->plan.command.output_index == 6);
  // CMake's: -MD -MT target -MF file.
  call = plan_compiler_call(
      {"c++", "-MD", "-MT", "x.o", "-MF", "x.o.d", "-o", "x.o", "-c", "/src/x.cpp"});
  REQUIRE(call);
  CHECK(call->plan.depfile == "x.o.d");
  CHECK(call->plan.command.argv.size() == 10);  // nothing added
  // -MFFILE attached: split, so the work directory's file takes its place.
  call = plan_compiler_call({"g++", "-c", "k.cpp", "-MMD", "-MFdeps/k.d", "-MQk.o", "-o", "k.o"});
  REQUIRE(call);
  CHECK(call->plan.depfile == "deps/k.d");
  CHECK(call->plan.command.argv ==
        Strings{"g++", "-c", "k.cpp", "-MMD", "-MF", "deps/k.d", "-MQk.o", "-o", "k.o"});
  CHECK(call->plan.command.output_index == 8);
  // Without -MD nothing is planned.
  call = plan_compiler_call({"g++", "-c", "k.cpp", "-o", "k.o"});
  REQUIRE(call);
  CHECK(call->plan.depfile.empty());
  CHECK(default_depfile("k") == "k.d");
  CHECK(default_depfile("a.b/k") == "a.b/k.d");
  CHECK(default_depfile("dir/k.tar.o") == "dir/k.tar.d");
}

TEST_CASE("the dependency file's step names it in the work directory",
          "[unit][compiler_call]"
          "[depfile]") {
  auto call = plan_compiler_call({"g++", "-c", "k.cpp", "-MD", "-o", "k.o"});
  REQUIRE(call);
  StepInput in;
  in.sources = call->sources;
  in.launcher = parse_launcher("ccache");
  std::vector<Step> steps = plan_steps(call->plan, in);
  REQUIRE(steps.size() == 1);
  REQUIRE(steps[0].depfile_index != 0);
  CHECK(steps[0].argv[steps[0].depfile_index] == "k.d");
  CHECK(steps[0].argv[steps[0].depfile_index - 1] == "-MF");
  CHECK(steps[0].argv[0] == "ccache");
}

TEST_CASE("files the compiler refuses itself run as they are", "[unit][compiler_call]") {
  kbuild_test::TempDir dir;
  kbuild_test::write_file(dir / "k.cpp", "int f();\n");
  auto refused = [](const Strings& argv) {
    auto call = plan_compiler_call(argv);
    REQUIRE(call);
    return compiler_refuses_files(*call);
  };
  CHECK_FALSE(refused({"g++", "-c", dir / "k.cpp", "-o", dir / "k.o"}));
  CHECK(refused({"g++", "-c", dir / "missing.cpp", "-o", dir / "k.o"}));
  CHECK(refused({"g++", "-c", dir / "k.cpp", "-o", dir / "nodir/k.o"}));
  CHECK(refused({"g++", "-c", dir / "k.cpp", "-o", dir / "k.cpp"}));
  // An output that is a directory is not a regular file: it runs as it is already.
  CHECK_FALSE(plan_compiler_call({"g++", "-c", dir / "k.cpp", "-o", dir.str()}));
  CHECK(refused({"g++", "-c", dir.str(), "-o", dir / "k.o"}));  // a source that is not a file
  CHECK(refused({"g++", "-c", dir / "k.cpp", "-MD", "-MF", dir / "nodir/k.d", "-o", dir / "k.o"}));
  CHECK_FALSE(refused({"g++", "-c", dir / "k.cpp", "-MD", "-o", dir / "k.o"}));
}

// compiler_kind: decided from the compiler's path alone, as Inductor does.
TEST_CASE("clang anywhere wins; gcc, g++ and gnu-c++ are gcc; the rest other",
          "[unit][compiler_kind]") {
  CHECK(compiler_kind("g++") == CompilerKind::gcc);
  CHECK(compiler_kind("/usr/bin/x86_64-linux-gnu-g++-12") == CompilerKind::gcc);
  CHECK(compiler_kind("gcc") == CompilerKind::gcc);
  CHECK(compiler_kind("/opt/gnu-c++") == CompilerKind::gcc);
  CHECK(compiler_kind("clang++") == CompilerKind::clang);
  CHECK(compiler_kind("/opt/clang/bin/g++") == CompilerKind::clang);
  CHECK(compiler_kind("c++") == CompilerKind::other);
  CHECK(compiler_kind("icpx") == CompilerKind::other);
  CHECK(compiler_kind("") == CompilerKind::other);
}
