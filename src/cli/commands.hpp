#pragma once

#include "kbuild/environment.hpp"

namespace kbuild::cli {

// The whole command line (kbuild cc included): parses argv, runs its command
// through the Driver, prints on std::cout and std::cerr and gives the exit
// code. main() calls it; the golden tests call it in process.
int run_command(int argc, char** argv, const Environment& env);

}  // namespace kbuild::cli
