// The one door through which a build starts programs (the compiler, the
// launcher, the load check, the compiler's search-dir questions), so tests
// can put a fake in its place and check the runner's logic without a
// compiler (ninja's CommandRunner / FakeCommandRunner).
#pragma once

#include <string>
#include <vector>

#include "kbuild/process.hpp"

namespace kbuild {

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // As run_process(): argv[0] already a path.
  virtual ProcessResult run(const std::vector<std::string>& argv,
                            const ProcessOptions& options) = 0;
};

// Starts real processes (run_process).
ProcessRunner& real_processes();

}  // namespace kbuild
