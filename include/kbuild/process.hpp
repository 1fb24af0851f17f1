// Running a program: argv only, never a shell (Boost.Process v2).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/interrupts.hpp"

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
  // On an interrupt (interrupts.hpp) received while waiting: pass it on to
  // the child's process group, wait (bounded) until the group is gone, and
  // report `interrupted_by`.
  bool handle_interrupts = false;
  // After passing an interrupt on: how long the group may take to exit (a
  // compiler removing its files) before it is killed (SIGKILL, then at most
  // 2 s more of waiting for it to go).
  std::chrono::milliseconds exit_grace{3000};
};

struct ProcessResult {
  bool exited = false;  // exited normally, with exit_code
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, when !exited
  bool timed_out = false;
  int interrupted_by = 0;  // the interrupt signal kbuild received while waiting
  bool output_truncated = false;
  std::string out;
  std::string err;

  bool success() const { return exited && exit_code == 0 && !timed_out && !interrupted_by; }
  // "exit code 1", "killed by signal 9 (Killed)", "timed out after 2s".
  std::string describe() const;
};

// Finds `program` like execvp: a name containing '/' is used as it is,
// otherwise each directory of PATH is searched. nullopt when not found or not
// executable.
std::optional<std::string> find_executable(const std::string& program, const Environment& env);

// Runs argv[0] (already resolved to a path) with argv[1..]. The child runs in
// its own process group so a time-out or interrupt ends all of it: neither
// waits for pipes that something the child left running still holds, and
// run_process returns only once that group is gone (or after a bounded
// wait), so nothing of it writes after kbuild cleaned up.
// Throws Error(compiler_missing) only if the process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

}  // namespace kbuild
