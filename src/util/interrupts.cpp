#include "kbuild/interrupts.hpp"

#include <fcntl.h>
#include <poll.h>
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
bool handlers_installed = false;
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
  if (handlers_installed) return;  // left by an earlier interrupt
  handlers_installed = true;
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
  // After an interrupt kbuild is ending: a second one (`timeout` signals
  // the child and then its group; a second Ctrl-C) is remembered too, not
  // fatal before the temporary is removed and the message said.
  if (caught != 0) return;
  handlers_installed = false;
  for (std::size_t i = 0; i < kInterrupts.size(); ++i)
    sigaction(kInterrupts[i], &saved_actions[i], nullptr);
  sigaction(SIGPIPE, &saved_pipe_action, nullptr);
}

InterruptsTaken::InterruptsTaken() {
  watch_.emplace();
  sigset_t set = interrupt_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, &before_);
}

int InterruptsTaken::stop() {
  if (!watch_) return 0;
  pthread_sigmask(SIG_SETMASK, &before_, nullptr);
  const int caught_now = interrupt_received();
  watch_.reset();
  return caught_now;
}

int sleep_unless_interrupted(std::chrono::milliseconds pause) {
  InterruptsTaken interrupts;
  const auto until = std::chrono::steady_clock::now() + pause;
  while (!interrupt_received()) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    struct pollfd wake {
      interrupt_fd(), POLLIN, 0
    };
    (void)::poll(&wake, wake.fd >= 0 ? 1 : 0, static_cast<int>(left.count()));
  }
  return interrupts.stop();
}

int interrupt_received() {
  return caught;
}

int interrupt_fd() {
  return wake_read;
}

}  // namespace kbuild
