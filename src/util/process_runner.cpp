#include "kbuild/process_runner.hpp"

namespace kbuild {

namespace {

class RealProcesses : public ProcessRunner {
 public:
  ProcessResult run(const std::vector<std::string>& argv, const ProcessOptions& options) override {
    return run_process(argv, options);
  }
};

}  // namespace

ProcessRunner& real_processes() {
  static RealProcesses runner;
  return runner;
}

}  // namespace kbuild
