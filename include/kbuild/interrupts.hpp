// Interrupts (SIGINT, SIGTERM, SIGHUP, SIGQUIT) while kbuild runs other
// programs: held pending where a window would leave a temporary behind, and
// caught (never acted on inside a signal handler) where kbuild waits.
#pragma once

#include <signal.h>

#include <chrono>
#include <optional>

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
