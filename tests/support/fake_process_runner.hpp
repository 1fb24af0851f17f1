// A ProcessRunner for logic that asks a program something (a compiler's
// search dirs, its version): it records each argv and gives one scripted
// answer, so the logic is tested without running anything.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/process.hpp"

namespace kbuild_test {

// A process that exited with `code`, having printed `out` and `err`.
inline kbuild::ProcessResult exited(int code, std::string out = {}, std::string err = {}) {
  kbuild::ProcessResult r;
  r.exited = true;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

class ScriptedRunner : public kbuild::ProcessRunner {
 public:
  std::vector<std::vector<std::string>> asked;
  kbuild::ProcessResult answer = exited(0);
  kbuild::ProcessResult run(const std::vector<std::string>& argv,
                            const kbuild::ProcessRequest&) override {
    asked.push_back(argv);
    return answer;
  }
};

}  // namespace kbuild_test
