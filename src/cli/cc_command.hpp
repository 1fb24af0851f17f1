// Compiler mode: `kbuild cc [--] COMPILER ARGS...`, or kbuild started through
// a link named g++, c++ or clang++ (as ccache is), runs that compiler command
// through kbuild's output cache and launcher, its words unchanged.
#pragma once

#include <optional>

#include "kbuild/environment.hpp"

namespace kbuild::cli {

// The exit code when argv asks for compiler mode, else nullopt (a normal
// kbuild command line).
std::optional<int> compiler_mode(int argc, char** argv, const Environment& env);

}  // namespace kbuild::cli
