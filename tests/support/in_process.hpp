#pragma once

#include <map>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace kbuild_test {

// run_kbuild, in this process: kbuild's command line (cli::run_command, what
// main() runs) with the same hermetic environment, its std::cout and
// std::cerr captured. For tests about what kbuild prints and answers, not
// about the program (the golden tests: hundreds of cases, a process each
// otherwise).
RunResult run_kbuild_in_process(const std::vector<std::string>& args, const std::string& home,
                                std::map<std::string, std::string> set = {},
                                std::vector<std::string> unset = {});

}  // namespace kbuild_test
