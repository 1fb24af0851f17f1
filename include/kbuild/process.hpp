// Running a program: argv only, never a shell (Boost.Process v2).
#pragma once

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"

namespace kbuild {

struct ProcessOptions {
  // Capture stdout/stderr (bounded by max_capture each); otherwise they pass
  // through to kbuild's own.
  bool capture_output = false;
  // With capture_output: also pass the output through to kbuild's own
  // stdout/stderr as it arrives (the compiler's diagnostics stay visible).
  bool tee_output = false;
  std::size_t max_capture = 16u << 20;
  std::optional<std::chrono::milliseconds> timeout;
  // The child's environment; nullptr: inherit kbuild's own.
  const Environment* environment = nullptr;
  // End the child's process group and report `interrupted` on SIGINT/SIGTERM.
  bool handle_interrupts = false;
};

struct ProcessResult {
  bool exited = false;  // exited normally, with exit_code
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, when !exited
  bool timed_out = false;
  int interrupted_by = 0;  // SIGINT/SIGTERM received by kbuild while waiting
  bool output_truncated = false;
  std::string out;
  std::string err;

  bool success() const { return exited && exit_code == 0 && !timed_out && !interrupted_by; }
  // "exit code 1", "killed by signal 9 (Killed)", "timed out after 2s".
  std::string describe() const;
};

// Holds SIGINT and SIGTERM pending while alive (restoring the mask after), so
// a build can create its temporary file and clean it up without a window in
// which an interrupt would leave it behind. run_process() takes them while it
// waits for the child.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  sigset_t saved_;
};

// Finds `program` like execvp: a name containing '/' is used as it is,
// otherwise each directory of PATH is searched. nullopt when not found or not
// executable.
std::optional<std::string> find_executable(const std::string& program, const Environment& env);

// Runs argv[0] (already resolved to a path) with argv[1..]. The child runs in
// its own process group so a time-out or interrupt ends all of it.
// Throws Error(compiler_missing) only if the process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

}  // namespace kbuild
