// compiler_kind: decided from the compiler's path alone, as Inductor does.
#include "plan/compiler_call.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

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
