#include "kbuild/process.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
#include <cstring>
#include <sstream>

#include "kbuild/error.hpp"

namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace kbuild {

namespace {

// Puts the child in a new process group, so that ending the group ends the
// compiler driver and everything it started (cc1plus, as, ld).
struct NewProcessGroup {
  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const bp::filesystem::path&, const char* const*&) {
    if (setpgid(0, 0) != 0) return bp::error_code(errno, bp::system_category());
    // kbuild may hold interrupts pending (InterruptGuard); the compiler must not.
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

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Reads a pipe to EOF into `sink`, keeping at most `limit` bytes.
class PipeReader {
 public:
  // `forward_fd` >= 0: also write what is read there.
  PipeReader(asio::readable_pipe& pipe, std::string& sink, std::size_t limit, bool& truncated,
             int forward_fd)
      : pipe_(pipe), sink_(sink), limit_(limit), truncated_(truncated), forward_fd_(forward_fd) {}
  void start() {
    pipe_.async_read_some(asio::buffer(buf_), [this](bp::error_code ec, std::size_t n) {
      if (n > 0) {
        std::size_t room = sink_.size() < limit_ ? limit_ - sink_.size() : 0;
        if (n > room) truncated_ = true;
        sink_.append(buf_.data(), std::min(n, room));
        forward(n);
      }
      if (!ec) start();
    });
  }

 private:
  void forward(std::size_t n) {
    for (std::size_t done = 0; forward_fd_ >= 0 && done < n;) {
      ssize_t w = ::write(forward_fd_, buf_.data() + done, n - done);
      if (w <= 0) break;  // our own stderr is gone: keep capturing regardless
      done += static_cast<std::size_t>(w);
    }
  }

  asio::readable_pipe& pipe_;
  std::string& sink_;
  std::size_t limit_;
  bool& truncated_;
  int forward_fd_;
  std::array<char, 65536> buf_{};
};

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  sigset_t set = interrupt_signals();
  pthread_sigmask(SIG_BLOCK, &set, &saved_);
}

InterruptGuard::~InterruptGuard() {
  pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

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

std::optional<std::string> find_executable(const std::string& program, const Environment& env) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos)
    return is_executable_file(program) ? std::optional<std::string>(program) : std::nullopt;
  std::string path = env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  asio::io_context ctx;
  ProcessResult result;
  std::vector<std::string> args(argv.begin() + 1, argv.end());

  asio::readable_pipe out_pipe(ctx), err_pipe(ctx);
  std::optional<bp::process> child;
  try {
    bp::process_stdio stdio = options.capture_output
                                  ? bp::process_stdio{nullptr, out_pipe, err_pipe}
                                  : bp::process_stdio{nullptr, {}, {}};
    if (options.environment) {
      std::vector<std::string> env = options.environment->entries();
      child.emplace(ctx, argv[0], args, std::move(stdio), bp::process_environment(env),
                    NewProcessGroup{});
    } else {
      child.emplace(ctx, argv[0], args, std::move(stdio), NewProcessGroup{});
    }
  } catch (const bp::system_error& e) {
    throw Error(ErrorKind::compiler_missing, "cannot start " + argv[0] + ": " + e.code().message());
  }
  const pid_t pgid = child->id();
  auto end_group = [&](int sig) { ::kill(-pgid, sig); };

  bool done = false;
  asio::steady_timer timer(ctx);
  if (options.timeout) {
    timer.expires_after(*options.timeout);
    timer.async_wait([&](bp::error_code ec) {
      if (ec || done) return;
      result.timed_out = true;
      end_group(SIGKILL);
    });
  }
  std::optional<asio::signal_set> signals;
  if (options.handle_interrupts) {
    signals.emplace(ctx, SIGINT, SIGTERM);
    signals->async_wait([&](bp::error_code ec, int sig) {
      if (ec || done) return;
      result.interrupted_by = sig;
      end_group(SIGTERM);
    });
  }
  PipeReader out_reader(out_pipe, result.out, options.max_capture, result.output_truncated,
                        options.tee_output ? STDOUT_FILENO : -1);
  PipeReader err_reader(err_pipe, result.err, options.max_capture, result.output_truncated,
                        options.tee_output ? STDERR_FILENO : -1);
  if (options.capture_output) {
    out_reader.start();
    err_reader.start();
  }
  child->async_wait([&](bp::error_code, int) {
    done = true;
    timer.cancel();
    if (signals) signals->cancel();
  });
  // Interrupts held pending by an InterruptGuard arrive now, at the handler.
  sigset_t set = interrupt_signals(), before;
  if (options.handle_interrupts) pthread_sigmask(SIG_UNBLOCK, &set, &before);
  ctx.run();
  if (options.handle_interrupts) pthread_sigmask(SIG_SETMASK, &before, nullptr);

  const int status = child->native_exit_code();
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  // Whatever the group left running (a timed-out or interrupted build).
  if (result.timed_out || result.interrupted_by) end_group(SIGKILL);
  return result;
}

}  // namespace kbuild
