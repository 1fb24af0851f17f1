#include <catch2/catch.hpp>

#include "kbuild/error.hpp"
#include "plan/assemble.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

namespace {
BuildOptions sample() {
  Origin o{Layer::device, "test", "", 0};
  BuildOptions b;
  b.add(OptionList::definitions, " USE_X", o);
  b.add(OptionList::cflags, "O3", o);
  b.add(OptionList::include_dirs, "/my dir/include", o);
  b.add(OptionList::ldflags, "Wl,-z,now", o);
  b.add(OptionList::libraries_dirs, "/lib dir", o);
  b.add(OptionList::libraries, "m", o);
  b.add(OptionList::passthrough_args, "-DA=1 '-DB=two words'", o);
  return b;
}
}  // namespace

TEST_CASE("shared library: Inductor's order with the link part last", "[unit][assemble]") {
  Command c =
      assemble(sample(), AssembleInput{"g++", {"k.cpp"}, OutputKind::shared_library, "k.so", {}});
  CHECK(c.argv == Strings{"g++", "k.cpp", "-D", "USE_X", "-O3", "-I/my dir/include", "-DA=1",
                          "-DB=two words", "-o", "k.so", "-Wl,-z,now", "-lm", "-L/lib dir"});
  CHECK(c.argv[c.output_index] == "k.so");
}

TEST_CASE("object, header and preprocessing outputs have no link part", "[unit][assemble]") {
  BuildOptions o = sample();
  Command obj = assemble(o, AssembleInput{"g++", {"k.cpp"}, OutputKind::object, "k.o", {}});
  CHECK(Strings(obj.argv.end() - 3, obj.argv.end()) == Strings{"-c", "-o", "k.o"});
  Command pch =
      assemble(o, AssembleInput{"g++", {"h.h"}, OutputKind::precompiled_header, "h.h.gch", {}});
  CHECK(Strings(pch.argv.begin(), pch.argv.begin() + 4) ==
        Strings{"g++", "-x", "c++-header", "h.h"});
  CHECK(pch.argv.back() == "h.h.gch");
  Command pre = assemble(o, AssembleInput{"g++", {"h.hpp"}, OutputKind::preprocessed, "h.i", {}});
  CHECK(Strings(pre.argv.end() - 4, pre.argv.end()) == Strings{"-E", "-P", "-o", "h.i"});
  for (const Command* c : {&obj, &pch, &pre}) {
    CHECK(std::find(c->argv.begin(), c->argv.end(), "-lm") == c->argv.end());
    CHECK(std::find(c->argv.begin(), c->argv.end(), "-Wl,-z,now") == c->argv.end());
  }
}

TEST_CASE("-include PCH sits between cflags and include dirs", "[unit][assemble]") {
  Command c =
      assemble(sample(), AssembleInput{"g++", {"k.cpp"}, OutputKind::object, "k.o", "pch/h.h"});
  auto at = std::find(c.argv.begin(), c.argv.end(), "-include");
  REQUIRE(at != c.argv.end());
  CHECK(*(at - 1) == "-O3");
  CHECK(*(at + 1) == "pch/h.h");
  CHECK(*(at + 2) == "-I/my dir/include");
}

TEST_CASE("several sources are linked into one library in the given order", "[unit][assemble]") {
  Command c =
      assemble(BuildOptions{},
               AssembleInput{"g++", {"a.o", "b.o", "w.o"}, OutputKind::shared_library, "m.so", {}});
  CHECK(c.argv == Strings{"g++", "a.o", "b.o", "w.o", "-o", "m.so"});
}

TEST_CASE("the Inductor line quotes include dirs only, like get_command_line()",
          "[unit][assemble]") {
  Command c =
      assemble(sample(), AssembleInput{"g++", {"k.cpp"}, OutputKind::shared_library, "k.so", {}});
  CHECK(c.inductor_line.find("-I'/my dir/include'") != std::string::npos);
  CHECK(c.inductor_line.find("-L/lib dir") != std::string::npos);
  CHECK(c.inductor_line.find("g++ k.cpp -D  USE_X  -O3 ") == 0);
}

TEST_CASE("an entry with an unbalanced quote is a config error naming its origin",
          "[unit][assemble]") {
  BuildOptions o;
  o.add(OptionList::passthrough_args, "-DX='oops",
        Origin{Layer::device, "config npu", "/c/npu.json", 9});
  CHECK_THROWS_WITH(assemble(o, AssembleInput{"g++", {"k.cpp"}, OutputKind::object, "k.o", {}}),
                    Catch::Contains("/c/npu.json:9"));
}

TEST_CASE("default outputs are named as Inductor names them", "[unit][assemble]") {
  CHECK(default_output("dir/kernel.cpp", OutputKind::shared_library) == "dir/kernel.so");
  CHECK(default_output("kernel.cpp", OutputKind::object) == "kernel.o");
  CHECK(default_output("c/abc.h", OutputKind::precompiled_header) == "c/abc.h.gch");
  CHECK(default_output("header.hpp", OutputKind::preprocessed) == "header.i");
}

TEST_CASE("a user -D is one argument; a list definition splits like Inductor's shlex",
          "[unit][assemble]") {
  BuildOptions o;
  o.add(OptionList::definitions, "MSG=\"hi there\"", Origin{Layer::user, "command line", "", 0});
  o.add(OptionList::definitions, "X=\"a b\"", Origin{Layer::device, "config x", "", 0});
  Command c = assemble(o, AssembleInput{"g++", {"k.cpp"}, OutputKind::object, "k.o", {}});
  CHECK(Strings(c.argv.begin() + 2, c.argv.begin() + 6) ==
        Strings{"-D", "MSG=\"hi there\"", "-D", "X=a b"});
}

TEST_CASE("a source named like an option reaches the compiler as a file", "[unit][assemble]") {
  Command c = assemble(
      sample(),
      AssembleInput{
          "g++", {"-rf.cpp", "--help.cpp", "k.cpp"}, OutputKind::shared_library, "k.so", {}});
  CHECK(Strings(c.argv.begin(), c.argv.begin() + 4) ==
        Strings{"g++", "./-rf.cpp", "./--help.cpp", "k.cpp"});
  CHECK(c.inductor_line.rfind("g++ ./-rf.cpp ./--help.cpp k.cpp ", 0) == 0);
}
