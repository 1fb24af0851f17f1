
#include "util/process.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/impl/environment.ipp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sstream>
#include <utility>

#include "kbuild/error.hpp"

namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace kbuild {

namespace {

// Puts the child in a new process group, so that ending the group ends the
// compiler driver and everything it started (cc1plus, as, ld).
struct NewProcessGroup {
  // Boost.Process ends a child whose exec failed with exit(): the parent's
  // atexit handlers would run in the copy and its stdio buffers be written
  // twice (under LeakSanitizer, the parent's heap reported into a pipe only
  // the child reads, forever). The failure already went to the parent.
  // Variadic: Boost looks for this hook by a five-argument signature and
  // calls it with four.
  template <typename Launcher, typename... Rest>
  void on_exec_error(Launcher&, Rest&&...) {
    ::_exit(127);
  }
  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const bp::filesystem::path&, const char* const*&) {
    if (setpgid(0, 0) != 0) return bp::error_code(errno, bp::system_category());
    // kbuild may hold interrupts pending (InterruptGuard) or catch them
    // (InterruptWatch); the compiler must not.
    sigset_t interrupts = interrupt_signals();
    for (int sig = 1; sig < NSIG; ++sig)
      if (sigismember(&interrupts, sig) == 1) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Only stdin/stdout/stderr may cross exec. Boost 1.81's close_all leaves
    // the fds below its error pipe open (a typo in its whitelist loop), so the
    // write ends of kbuild's own pipes leaked into compilers: anything a
    // compiler left running (an sccache server, a stray child) kept them open
    // and kbuild waited for it. Runs after stdio's dup2.
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
      for (int fd = 3; fd < 4096; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    return {};
  }
};

// A pipe's read end, read as data arrives into `sink` (at most `limit`
// bytes kept), optionally also written to `forward_fd`.
class PipeSink {
 public:
  PipeSink(int fd, std::string& sink, std::size_t limit, bool& truncated, int forward_fd,
           std::vector<OutputSpan>* order = nullptr, int stream = 0)
      : fd_(fd),
        sink_(sink),
        limit_(limit),
        truncated_(truncated),
        forward_fd_(forward_fd),
        order_(order),
        stream_(stream) {}
  ~PipeSink() { close(); }
  PipeSink(const PipeSink&) = delete;
  PipeSink& operator=(const PipeSink&) = delete;

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  // Reads what poll() said is there; closes at end of file.
  void read_some() {
    ssize_t n = ::read(fd_, buf_.data(), buf_.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) return close();
    keep(static_cast<std::size_t>(n));
    forward(static_cast<std::size_t>(n));
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void keep(std::size_t n) {
    std::size_t room = sink_.size() < limit_ ? limit_ - sink_.size() : 0;
    if (n > room) truncated_ = true;
    const std::size_t kept = std::min(n, room);
    sink_.append(buf_.data(), kept);
    if (!order_ || kept == 0) return;
    if (!order_->empty() && order_->back().stream == stream_)
      order_->back().bytes += kept;
    else
      order_->push_back({stream_, kept});
  }
  void forward(std::size_t n) {
    for (std::size_t done = 0; forward_fd_ >= 0 && done < n;) {
      ssize_t w = ::write(forward_fd_, buf_.data() + done, n - done);
      if (w <= 0) break;  // our own stderr is gone: keep capturing regardless
      done += static_cast<std::size_t>(w);
    }
  }

  int fd_;
  std::string& sink_;
  std::size_t limit_;
  bool& truncated_;
  int forward_fd_;
  std::vector<OutputSpan>* order_;
  int stream_;
  std::array<char, 65536> buf_{};
};

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
// After a SIGKILL: how long to wait for the group to go (the grace before
// it is ProcessRequest::exit_grace).
constexpr milliseconds kKillWait{2000};
// How often an ending group is looked at.
constexpr milliseconds kTick{10};

// Waits for a child that leads its own process group: for it to exit and its
// pipes to close, or for the deadline or an interrupt, after which the whole
// group is ended and waited for (bounded).
class GroupWait {
 public:
  GroupWait(pid_t pid, const ProcessRequest& options, ProcessResult& result,
            std::vector<PipeSink*> pipes)
      : pid_(pid),
        pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))),
        options_(options),
        result_(result),
        pipes_(std::move(pipes)) {
    if (options.timeout) deadline_ = Clock::now() + *options.timeout;
  }
  ~GroupWait() {
    if (pidfd_ >= 0) ::close(pidfd_);
  }
  GroupWait(const GroupWait&) = delete;
  GroupWait& operator=(const GroupWait&) = delete;

  // The child's wait status, if it was reaped.
  std::optional<int> run() {
    for (;;) {
      const Clock::time_point now = Clock::now();
      if (!ending_) notice_end(now);
      if (!ending_ && reaped() && pipes_closed()) break;
      if (ending_ && ended(now)) break;
      wait_for_events(now);
      reap();
    }
    return status_;
  }

 private:
  bool reaped() const { return status_.has_value(); }
  bool pipes_closed() const {
    return std::none_of(pipes_.begin(), pipes_.end(), [](PipeSink* p) { return p->open(); });
  }
  bool group_gone() const { return ::kill(-pid_, 0) != 0 && errno == ESRCH; }

  // An interrupt or the deadline starts ending the group.
  void notice_end(Clock::time_point now) {
    if (options_.handle_interrupts && interrupt_received()) {
      const int sig = result_.interrupted_by = interrupt_received();
      begin_ending(sig == SIGINT || sig == SIGTERM ? sig : SIGTERM, now);
    } else if (deadline_ && now >= *deadline_) {
      result_.timed_out = true;
      begin_ending(SIGKILL, now);
    }
  }
  void begin_ending(int sig, Clock::time_point now) {
    ending_ = true;
    ::kill(-pid_, sig);
    killed_ = sig == SIGKILL;
    give_up_at_ = now + (killed_ ? kKillWait : options_.exit_grace);
  }
  // True once the group is gone, or when the bounded wait is over; kills
  // the group when its grace period runs out.
  bool ended(Clock::time_point now) {
    if (reaped() && group_gone()) return true;
    if (now < give_up_at_) return false;
    if (killed_) return true;
    ::kill(-pid_, SIGKILL);
    killed_ = true;
    give_up_at_ = now + kKillWait;
    return false;
  }

  void wait_for_events(Clock::time_point now) {
    std::vector<pollfd> fds;
    if (options_.handle_interrupts && !ending_ && interrupt_fd() >= 0)
      fds.push_back({interrupt_fd(), POLLIN, 0});
    if (!reaped() && pidfd_ >= 0) fds.push_back({pidfd_, POLLIN, 0});
    const std::size_t first_pipe = fds.size();
    for (PipeSink* p : pipes_)
      if (p->open()) fds.push_back({p->fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), poll_timeout(now));
    for (std::size_t i = first_pipe; i < fds.size(); ++i)
      for (PipeSink* p : pipes_)
        if (fds[i].revents && p->fd() == fds[i].fd) p->read_some();
  }
  int poll_timeout(Clock::time_point now) const {
    // Without a pidfd (an old kernel) the child's exit is looked for on a tick.
    milliseconds wait = ending_ || pidfd_ < 0 ? kTick : milliseconds::max();
    auto until = [&](Clock::time_point t) {
      return std::max(milliseconds(0), std::chrono::ceil<milliseconds>(t - now));
    };
    if (deadline_ && !ending_) wait = std::min(wait, until(*deadline_));
    if (ending_) wait = std::min(wait, until(give_up_at_));
    return wait == milliseconds::max() ? -1 : static_cast<int>(wait.count());
  }
  // Reaps the child and what of its group was left to kbuild (see
  // adopt_orphans), so that a group of zombies counts as gone.
  void reap() {
    int status = 0;
    for (pid_t p; (p = ::waitpid(-pid_, &status, WNOHANG)) > 0;)
      if (p == pid_) status_ = status;
  }

  pid_t pid_;
  int pidfd_;
  const ProcessRequest& options_;
  ProcessResult& result_;
  std::vector<PipeSink*> pipes_;
  std::optional<Clock::time_point> deadline_;
  std::optional<int> status_;
  bool ending_ = false, killed_ = false;
  Clock::time_point give_up_at_;
};

// Orphans of a child's group become kbuild's own children (instead of
// init's, which may never reap them), so the group can be seen to be gone.
void adopt_orphans() {
  static const bool adopted = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)adopted;
}

}  // namespace

std::string ProcessResult::describe() const {
  std::ostringstream s;
  if (interrupted_by)
    s << "interrupted by signal " << interrupted_by << " (" << strsignal(interrupted_by) << ")";
  else if (timed_out)
    s << "timed out";
  else if (exited)
    s << "exit code " << exit_code;
  else
    s << "killed by signal " << signal << " (" << strsignal(signal) << ")";
  return s.str();
}

namespace {

// Starts argv[0] in its own process group, its stdout and stderr into the
// pipes when capturing.
bp::process start_child(asio::io_context& ctx, const std::vector<std::string>& argv,
                        const ProcessRequest& options, asio::readable_pipe& out_pipe,
                        asio::readable_pipe& err_pipe) {
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  try {
    bp::process_stdio stdio = options.capture_output
                                  ? bp::process_stdio{nullptr, out_pipe, err_pipe}
                                  : bp::process_stdio{nullptr, {}, {}};
    if (!options.environment)
      return bp::process(ctx, argv[0], args, std::move(stdio), NewProcessGroup{});
    std::vector<std::string> env = options.environment->entries();
    return bp::process(ctx, argv[0], args, std::move(stdio), bp::process_environment(env),
                       NewProcessGroup{});
  } catch (const bp::system_error& e) {
    throw Error(ErrorKind::compiler_missing, "cannot start " + argv[0] + ": " + e.code().message());
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessRequest& options) {
  adopt_orphans();
  ProcessResult result;
  // Taken before the child starts, so that no interrupt from then on is lost
  // (ignored, or ending kbuild and leaving the child running).
  std::optional<InterruptsTaken> interrupts;
  if (options.handle_interrupts) interrupts.emplace();
  if (options.handle_interrupts && interrupt_received()) {
    result.interrupted_by = interrupts->stop();  // no child started
    return result;
  }
  asio::io_context ctx;
  asio::readable_pipe out_pipe(ctx), err_pipe(ctx);
  bp::process child = start_child(ctx, argv, options, out_pipe, err_pipe);
  PipeSink out(options.capture_output ? out_pipe.release() : -1, result.out, options.max_capture,
               result.output_truncated, options.tee_output ? STDOUT_FILENO : -1, &result.order, 1);
  PipeSink err(options.capture_output ? err_pipe.release() : -1, result.err, options.max_capture,
               result.output_truncated, options.tee_output ? STDERR_FILENO : -1, &result.order, 2);
  std::optional<int> status = GroupWait(child.id(), options, result, {&out, &err}).run();
  if (int late = interrupts ? interrupts->stop() : 0; late && !result.interrupted_by)
    result.interrupted_by = late;
  child.detach();  // reaped here (or given up on): Boost must neither wait nor kill
  if (status && WIFEXITED(*status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(*status);
  } else if (status && WIFSIGNALED(*status)) {
    result.signal = WTERMSIG(*status);
  }
  return result;
}

}  // namespace kbuild

namespace kbuild {

namespace {

// Starts argv[0] with its stdin and stdout on two new pipes and its stderr
// on /dev/null, no signal blocked and SIGPIPE at its default.
Result<Coprocess> start_coprocess(const std::vector<std::string>& argv) {
  if (argv.empty()) return Failure{"nothing to run"};
  int request[2], answer[2];
  if (::pipe2(request, O_CLOEXEC) != 0)
    return Failure{"pipe: " + std::string(std::strerror(errno))};
  UniqueFd request_read(request[0]), request_write(request[1]);
  if (::pipe2(answer, O_CLOEXEC) != 0) return Failure{"pipe: " + std::string(std::strerror(errno))};
  UniqueFd answer_read(answer[0]), answer_write(answer[1]);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_adddup2(&actions, request_read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, answer_write.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> words = argv;
  std::vector<char*> pointers;
  pointers.reserve(words.size() + 1);
  for (std::string& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawn(&pid, words[0].c_str(), &actions, &attributes, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) return Failure{"cannot run " + argv[0] + ": " + std::strerror(spawned)};
  for (int fd : {request_write.get(), answer_read.get()})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return Coprocess(pid, std::move(request_write), std::move(answer_read));
}

class RealProcesses : public ProcessRunner {
 public:
  ProcessResult run(const std::vector<std::string>& argv, const ProcessRequest& options) override {
    return run_process(argv, options);
  }
  Result<Coprocess> start(const std::vector<std::string>& argv) override {
    return start_coprocess(argv);
  }
};

}  // namespace

Result<Coprocess> ProcessRunner::start(const std::vector<std::string>& argv) {
  return Failure{"cannot run " + (argv.empty() ? std::string("a program") : argv[0]) +
                 ": this process runner starts no programs"};
}

Coprocess::Coprocess(Coprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      to_child_(std::move(other.to_child_)),
      from_child_(std::move(other.from_child_)) {}

Coprocess& Coprocess::operator=(Coprocess&& other) noexcept {
  if (this != &other) {
    end();
    pid_ = std::exchange(other.pid_, -1);
    to_child_ = std::move(other.to_child_);
    from_child_ = std::move(other.from_child_);
  }
  return *this;
}

void Coprocess::end() {
  to_child_.reset();
  from_child_.reset();
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

ProcessRunner& real_processes() {
  static RealProcesses runner;
  return runner;
}

}  // namespace kbuild

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

// Boost 1.81's header-only Boost.Process v2 leaves process_environment's
// implementation out of its headers; it is compiled once, here.
