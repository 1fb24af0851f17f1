#include "kbuild/interrupts.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace kbuild {

namespace {

constexpr std::array<int, 4> kInterrupts{SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::atomic<int> caught{0};
std::atomic<int> wake_write{-1};
int wake_read = -1;
std::mutex watch_mutex;
int watches = 0;
std::array<struct sigaction, kInterrupts.size()> saved_actions;
struct sigaction saved_pipe_action;

extern "C" void remember_interrupt(int sig) {
  const int saved_errno = errno;
  int none = 0;
  caught.compare_exchange_strong(none, sig);
  if (int fd = wake_write.load(); fd >= 0) (void)!::write(fd, "!", 1);
  errno = saved_errno;
}

// kbuild's own stdout or stderr closed under it is no reason to leave the
// compiler running and its temporary behind: the write fails instead.
extern "C" void ignore_broken_pipe(int) {}

void open_wake_pipe() {
  if (wake_read >= 0) {
    char drain[64];
    while (::read(wake_read, drain, sizeof drain) > 0) {
    }
    return;
  }
  int fds[2];
  // Without it, a caught signal still ends the poll() of the thread it hit (EINTR).
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
  wake_read = fds[0];
  wake_write = fds[1];
}

}  // namespace

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kInterrupts) sigaddset(&set, sig);
  return set;
}

InterruptGuard::InterruptGuard() {
  sigset_t set = interrupt_signals();
  pthread_sigmask(SIG_BLOCK, &set, &saved_);
}

InterruptGuard::~InterruptGuard() {
  pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

InterruptWatch::InterruptWatch() {
  std::lock_guard<std::mutex> lock(watch_mutex);
  if (watches++ > 0) return;
  open_wake_pipe();
  caught = 0;
  struct sigaction action {};
  action.sa_handler = remember_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (std::size_t i = 0; i < kInterrupts.size(); ++i)
    sigaction(kInterrupts[i], &action, &saved_actions[i]);
  // A handler, not SIG_IGN: exec resets it, so the compiler keeps the default.
  action.sa_handler = ignore_broken_pipe;
  sigaction(SIGPIPE, &action, &saved_pipe_action);
}

InterruptWatch::~InterruptWatch() {
  std::lock_guard<std::mutex> lock(watch_mutex);
  if (--watches > 0) return;
  for (std::size_t i = 0; i < kInterrupts.size(); ++i)
    sigaction(kInterrupts[i], &saved_actions[i], nullptr);
  sigaction(SIGPIPE, &saved_pipe_action, nullptr);
}

int interrupt_received() {
  return caught;
}

int interrupt_fd() {
  return wake_read;
}

}  // namespace kbuild
