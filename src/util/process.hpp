// process: running a program without a shell (ProcessRunner seam, time limits, output limits) and
// Ctrl-C.
#pragma once

#include <signal.h>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "util/file_system.hpp"  // find_executable
#include "util/trusted_dir.hpp"  // UniqueFd

// Interrupts (SIGINT, SIGTERM, SIGHUP, SIGQUIT) while kbuild runs other
// programs: held pending where a window would leave a temporary behind, and
// caught (never acted on inside a signal handler) where kbuild waits.
namespace kbuild {

// The signals that end a build: its compiler is ended, its temporary removed.
sigset_t interrupt_signals();

// Holds the interrupt signals pending while alive (restoring the mask after),
// so a build can create its temporary file and clean it up without a window
// in which an interrupt would leave it behind. run_process() takes them while
// it waits for the child.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  sigset_t saved_;
};

// While at least one is alive, the interrupt signals are caught: the first
// one is remembered (interrupt_received()) and wakes interrupt_fd(). The
// first watch starts with no interrupt remembered. After an interrupt kbuild
// is expected to end: it stays remembered while any watch is alive, and
// interrupts stay caught after the last one ends (a second one is not fatal).
class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;
};

// While alive, interrupts are caught (an InterruptWatch) and unblocked, so
// those an InterruptGuard held pending arrive: for waits that must end on
// Ctrl-C (a compiler running, a server that does not answer).
class InterruptsTaken {
 public:
  InterruptsTaken();
  ~InterruptsTaken() { stop(); }
  InterruptsTaken(const InterruptsTaken&) = delete;
  InterruptsTaken& operator=(const InterruptsTaken&) = delete;

  // Restores the signal mask; then the interrupt caught, if any (also one
  // that came as the wait ended, after it stopped looking).
  int stop();

 private:
  std::optional<InterruptWatch> watch_;
  sigset_t before_{};
};

// Sleeps for `pause` unless an interrupt comes first (taken as above):
// then returns its signal at once; 0 after a whole sleep.
int sleep_unless_interrupted(std::chrono::milliseconds pause);

// The signal caught by a live InterruptWatch, 0 if none.
int interrupt_received();
// Readable once an interrupt was caught (for poll); -1 without a watch.
int interrupt_fd();

}  // namespace kbuild

// Running a program: argv only, never a shell (Boost.Process v2).
namespace kbuild {

struct ProcessRequest {
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
  // On an interrupt (interrupt_signals above) received while waiting: pass it on to
  // the child's process group, wait (bounded) until the group is gone, and
  // report `interrupted_by`.
  bool handle_interrupts = false;
  // After passing an interrupt on: how long the group may take to exit (a
  // compiler removing its files) before it is killed (SIGKILL, then at most
  // 2 s more of waiting for it to go).
  std::chrono::milliseconds exit_grace{3000};
};

// A run of bytes one stream gave in a row: what a captured program printed,
// in the order it came (stdout and stderr are separate pipes).
struct OutputSpan {
  int stream = 2;  // 1: stdout, 2: stderr
  std::size_t bytes = 0;
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
  // How `out` and `err` interleaved as captured: spans in arrival order
  // (empty from a runner that does not record it: out, then err).
  std::vector<OutputSpan> order;

  bool success() const { return exited && exit_code == 0 && !timed_out && !interrupted_by; }
  // "exit code 1", "killed by signal 9 (Killed)", "timed out after 2s".
  std::string describe() const;
};

// Runs argv[0] (already resolved to a path) with argv[1..]. The child runs in
// its own process group so a time-out or interrupt ends all of it: neither
// waits for pipes that something the child left running still holds, and
// run_process returns only once that group is gone (or after a bounded
// wait), so nothing of it writes after kbuild cleaned up.
// Throws Error(compiler_missing) only if the process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessRequest& options);

}  // namespace kbuild

// The one door through which a build starts programs (the compiler, the
// launcher, the load check, the compiler's search-dir questions), so tests
// can put a fake in its place and check the runner's logic without a
// compiler (ninja's CommandRunner / FakeCommandRunner).
namespace kbuild {

// A program kept running beside kbuild and spoken to through two pipes (a
// helper such as kbuild-http): kbuild holds its stdin's write end and its
// stdout's read end (both non-blocking), its stderr is /dev/null. It starts
// with no signal blocked and SIGPIPE at its default, so it ends by itself
// once kbuild is gone; kbuild ends it (SIGKILL, then reaped) with the object.
class Coprocess {
 public:
  Coprocess() = default;
  Coprocess(pid_t pid, UniqueFd to_child, UniqueFd from_child)
      : pid_(pid), to_child_(std::move(to_child)), from_child_(std::move(from_child)) {}
  ~Coprocess() { end(); }
  Coprocess(Coprocess&& other) noexcept;
  Coprocess& operator=(Coprocess&& other) noexcept;
  Coprocess(const Coprocess&) = delete;
  Coprocess& operator=(const Coprocess&) = delete;

  bool running() const { return pid_ > 0; }
  int to_child() const { return to_child_.get(); }
  int from_child() const { return from_child_.get(); }
  // Closes the pipes (at its next read it ends by itself), then kills it in
  // case it is stuck and waits for it.
  void end();

 private:
  pid_t pid_ = -1;
  UniqueFd to_child_, from_child_;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // As run_process(): argv[0] already a path.
  virtual ProcessResult run(const std::vector<std::string>& argv,
                            const ProcessRequest& options) = 0;
  // Starts argv[0] (already a path) as a Coprocess, or says why it could
  // not. A runner that starts no real programs (a test's) answers a failure.
  virtual Result<Coprocess> start(const std::vector<std::string>& argv);
};

// Starts real processes (run_process).
ProcessRunner& real_processes();

}  // namespace kbuild
