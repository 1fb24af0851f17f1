// compiler_call: the parts only the library uses (the API: kbuild/compiler_call.hpp).
#pragma once

#include <string_view>

// Which compiler family a command names. Like Inductor, this is decided from
// the compiler's path alone, so it costs no process spawn.
namespace kbuild {

enum class CompilerKind { gcc, clang, other };

// "clang" anywhere in the path is clang (so clang++ is not g++); "gcc",
// "g++" or "gnu-c++" is gcc; anything else (c++, icpx, ...) is other.
CompilerKind compiler_kind(std::string_view compiler);

}  // namespace kbuild
