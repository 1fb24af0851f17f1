#include <catch2/catch.hpp>

#include "plan/compiler_call.hpp"
#include "plan/plan.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

namespace {
bool has(const BuildOptions& o, const std::string& flag) {
  auto v = o.values(OptionList::cflags);
  return std::find(v.begin(), v.end(), flag) != v.end();
}
}  // namespace

TEST_CASE("compiler family comes from the path, clang++ is not g++", "[unit][base]") {
  CHECK(compiler_kind("/usr/bin/g++-12") == CompilerKind::gcc);
  CHECK(compiler_kind("x86_64-linux-gnu-gcc") == CompilerKind::gcc);
  CHECK(compiler_kind("clang++") == CompilerKind::clang);
  CHECK(compiler_kind("/opt/llvm/bin/clang++-17") == CompilerKind::clang);
  CHECK(compiler_kind("c++") == CompilerKind::other);
}

TEST_CASE(
    "g++ gets -pedantic, -fexcess-precision=fast and -fno-tree-loop-vectorize; clang its own "
    "warning",
    "[unit][base]") {
  BaseSettings s;
  s.compiler = "g++";
  BuildOptions gcc = base_layer(s);
  CHECK(has(gcc, "pedantic"));
  CHECK(has(gcc, "fexcess-precision=fast"));
  CHECK(has(gcc, "fno-tree-loop-vectorize"));
  CHECK_FALSE(has(gcc, "Wno-ignored-optimization-argument"));
  s.compiler = "clang++";
  BuildOptions clang = base_layer(s);
  CHECK_FALSE(has(clang, "pedantic"));
  CHECK_FALSE(has(clang, "fexcess-precision=fast"));
  // Inductor's default (aot_inductor.raise_error_on_ignored_optimization).
  CHECK(has(clang, "Werror=ignored-optimization-argument"));
  CHECK_FALSE(has(clang, "Wno-ignored-optimization-argument"));
}

TEST_CASE("clang: AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION=0 turns the error into -Wno-",
          "[unit][base]") {
  Environment env;
  BaseSettings s;
  s.compiler = "clang++";
  s.env = &env;
  env.set("AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION", "0");
  CHECK(has(base_layer(s), "Wno-ignored-optimization-argument"));
  CHECK_FALSE(has(base_layer(s), "Werror=ignored-optimization-argument"));
  env.set("AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION", "1");
  CHECK(has(base_layer(s), "Werror=ignored-optimization-argument"));
}

TEST_CASE("optimization modes: -O3 -DNDEBUG, minimum -O1, debug -O0 -g", "[unit][base]") {
  BaseSettings s;
  Strings v = base_layer(s).values(OptionList::cflags);
  CHECK(Strings(v.begin(), v.begin() + 2) == Strings{"O3", "DNDEBUG"});
  s.min_optimize = true;
  v = base_layer(s).values(OptionList::cflags);
  CHECK(Strings(v.begin(), v.begin() + 2) == Strings{"O1", "DNDEBUG"});
  s.debug = true;
  v = base_layer(s).values(OptionList::cflags);
  CHECK(Strings(v.begin(), v.begin() + 2) == Strings{"O0", "g"});
  CHECK_FALSE(has(base_layer(s), "DNDEBUG"));
}

TEST_CASE("-shared only when linking, -fPIC always; -mcpu=native on ppc64le", "[unit][base]") {
  BaseSettings s;
  CHECK(has(base_layer(s), "shared"));
  s.do_link = false;
  CHECK_FALSE(has(base_layer(s), "shared"));
  CHECK(has(base_layer(s), "fPIC"));
  CHECK(has(base_layer(s), "march=native"));
  s.machine = "ppc64le";
  CHECK(has(base_layer(s), "mcpu=native"));
  CHECK_FALSE(has(base_layer(s), "march=native"));
}

TEST_CASE("riscv: -march=rv64gc / rv32gc instead of -march=native (Inductor and torch_npu)",
          "[unit][base]") {
  BaseSettings s;
  s.machine = "riscv64";
  CHECK(has(base_layer(s), "march=rv64gc"));
  s.machine = "riscv32";
  CHECK(has(base_layer(s), "march=rv32gc"));
  CHECK_FALSE(has(base_layer(s), "march=native"));
}

TEST_CASE("extra flags become one passthrough entry, empty when none", "[unit][base]") {
  BaseSettings s;
  CHECK(base_layer(s).values(OptionList::passthrough_args) == Strings{""});
  s.extra_flags = {"-g3", "-DX=1"};
  CHECK(base_layer(s).values(OptionList::passthrough_args) == Strings{"-g3 -DX=1"});
}

TEST_CASE("warning_all off drops -Wall only (Inductor's ISA probe builds)", "[unit][base]") {
  BaseSettings s;
  CHECK(has(base_layer(s), "Wall"));
  s.warning_all = false;
  CHECK_FALSE(has(base_layer(s), "Wall"));
  CHECK(has(base_layer(s), "Wno-unused-variable"));
}
