// Where the compiler looks for headers: its include search list for a
// command line, as `-E -v` prints it.
#pragma once

#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/process_runner.hpp"

namespace kbuild {

// The include search list the compiler uses for `argv` (its -v output),
// quote dirs first, as normal paths; empty when it cannot be read.
std::vector<std::string> include_search_dirs(const std::vector<std::string>& argv,
                                             const Environment& env, ProcessRunner& processes);

}  // namespace kbuild
