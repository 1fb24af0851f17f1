#include "plan/compiler_kind.hpp"

namespace kbuild {

CompilerKind compiler_kind(std::string_view compiler) {
  auto has = [&](std::string_view s) { return compiler.find(s) != std::string_view::npos; };
  if (has("clang")) return CompilerKind::clang;
  if (has("gcc") || has("g++") || has("gnu-c++")) return CompilerKind::gcc;
  return CompilerKind::other;
}

}  // namespace kbuild
