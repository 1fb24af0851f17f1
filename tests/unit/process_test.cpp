// run_process and find_executable: argv only, captured output within its
// bound, a time-out that ends the whole process group, exact exit status.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "util/process.hpp"

using namespace kbuild;
using kbuild_test::never_fifo;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

ProcessResult sh(const std::string& script, ProcessRequest options = {}) {
  options.capture_output = true;
  return run_process({"/bin/sh", "-c", script}, options);
}

// Whether process `pid` is gone within a couple of seconds.
bool gone(pid_t pid) {
  return kbuild_test::ends_within(pid, 2000);
}

}  // namespace

// Interrupts: held pending by a guard, caught (never acted on in a handler)
// while a watch is alive, and put back as they were after.
namespace {

bool blocked(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

TEST_CASE("the interrupt signals: INT, TERM, HUP and QUIT", "[unit][interrupts]") {
  sigset_t set = interrupt_signals();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) CHECK(sigismember(&set, sig) == 1);
  CHECK(sigismember(&set, SIGKILL) == 0);
  CHECK(sigismember(&set, SIGPIPE) == 0);
}

TEST_CASE("a guard holds them pending and restores the mask it found", "[unit][interrupts]") {
  REQUIRE_FALSE(blocked(SIGTERM));
  {
    InterruptGuard outer;
    CHECK(blocked(SIGINT));
    CHECK(blocked(SIGTERM));
    CHECK_FALSE(blocked(SIGUSR1));
    {
      InterruptGuard inner;
      CHECK(blocked(SIGHUP));
    }
    CHECK(blocked(SIGHUP));  // the outer guard still holds them
  }
  CHECK_FALSE(blocked(SIGTERM));
}

TEST_CASE("a watch remembers the first interrupt and wakes its descriptor", "[unit][interrupts]") {
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  {
    InterruptWatch watch;
    CHECK(interrupt_received() == 0);
    REQUIRE(interrupt_fd() >= 0);
    CHECK_FALSE(readable(interrupt_fd()));
    ::raise(SIGTERM);  // caught: the test goes on
    ::raise(SIGINT);
    CHECK(interrupt_received() == SIGTERM);
    CHECK(readable(interrupt_fd()));
    {
      InterruptWatch nested;  // not the first: it keeps what was caught
      CHECK(interrupt_received() == SIGTERM);
    }
    CHECK(interrupt_received() == SIGTERM);
  }
  // kbuild is ending: a second interrupt (timeout's to the group) is caught
  // too, not fatal before its cleanup.
  struct sigaction ending {};
  sigaction(SIGTERM, nullptr, &ending);
  CHECK(ending.sa_handler != before.sa_handler);
  ::raise(SIGTERM);  // the test goes on
  {
    InterruptWatch fresh;  // the first watch again starts with nothing caught
    CHECK(interrupt_received() == 0);
    CHECK_FALSE(readable(interrupt_fd()));
  }
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  CHECK(after.sa_handler == before.sa_handler);  // put back once a watch ends with none caught
}

TEST_CASE("run_process captures stdout and stderr apart, and the exit code", "[unit][process]") {
  ProcessResult r = sh("echo out; echo err >&2; exit 3");
  CHECK(r.exited);
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK_FALSE(r.success());
  CHECK(r.describe() == "exit code 3");
  CHECK(sh("true").success());
}

TEST_CASE("arguments reach the program as they are: no shell in between", "[unit][process]") {
  ProcessRequest options;
  options.capture_output = true;
  ProcessResult r =
      run_process({"/usr/bin/printf", "[%s]\n", "a b", "$HOME", "*", "'q'", ""}, options);
  CHECK(r.out == "[a b]\n[$HOME]\n[*]\n['q']\n[]\n");
}

TEST_CASE("the child gets exactly the environment given, or kbuild's own", "[unit][process]") {
  Environment env{{{"ONLY", "this one"}}};
  ProcessRequest options;
  options.environment = &env;
  ProcessResult r = sh("env", options);
  CHECK(r.out.find("ONLY=this one\n") != std::string::npos);
  CHECK(r.out.find("HOME=") == std::string::npos);
  ::setenv("KBUILD_PROCESS_TEST", "inherited", 1);
  CHECK(sh("echo $KBUILD_PROCESS_TEST").out == "inherited\n");
  ::unsetenv("KBUILD_PROCESS_TEST");
}

TEST_CASE("output beyond max_capture is cut and marked, and the child still finishes",
          "[unit][process]") {
  ProcessRequest options;
  options.max_capture = 1000;
  ProcessResult r = sh("head -c 300000 /dev/zero | tr '\\0' x; echo done >&2", options);
  CHECK(r.success());
  CHECK(r.out == std::string(1000, 'x'));
  CHECK(r.err == "done\n");
  CHECK(r.output_truncated);
  CHECK_FALSE(sh("echo 12345").output_truncated);
}

TEST_CASE("a time-out ends the child and all it started, promptly", "[unit][process]") {
  TempDir tmp;
  ProcessRequest options;
  options.timeout = 200ms;
  const auto start = std::chrono::steady_clock::now();
  // Both block on a FIFO nobody writes: only the time-out ends them.
  const std::string hang = "cat " + never_fifo(tmp / "never");
  ProcessResult r = sh(hang + " & echo $! > " + tmp / "pid" + "; " + hang, options);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(r.timed_out);
  CHECK_FALSE(r.success());
  CHECK(r.describe().rfind("timed out", 0) == 0);
  CHECK(took < 5s);
  const pid_t grandchild = std::stoi(read_file(tmp / "pid"));
  CHECK(gone(grandchild));
}

TEST_CASE("a child killed by a signal is described by its signal", "[unit][process]") {
  ProcessResult r = sh("kill -9 $$");
  CHECK_FALSE(r.exited);
  CHECK(r.signal == SIGKILL);
  CHECK_FALSE(r.timed_out);
  CHECK(r.describe() == "killed by signal 9 (Killed)");
}

TEST_CASE("a program that cannot be started is Error(compiler_missing)", "[unit][process]") {
  TempDir tmp;
  write_file(tmp / "not-executable", "#!/bin/sh\n");
  for (const std::string& program : {tmp / "missing", tmp / "not-executable"}) {
    try {
      (void)run_process({program}, {});
      FAIL("started " << program);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::compiler_missing);
      CHECK(std::string(e.what()).find("cannot start " + program) == 0);
    }
  }
}

TEST_CASE("a child whose exec fails leaves at once: kbuild's unflushed output is not written twice",
          "[unit][process]") {
  // In a process of the test's own, stdout a pipe (so fully buffered): a
  // line still in the buffer when the exec fails. A child that ended with
  // exit() flushed its copy of that buffer too (and, under LeakSanitizer,
  // reported the parent's heap into a pipe only it read, blocking forever).
  TempDir tmp;
  int out[2];
  REQUIRE(::pipe(out) == 0);
  std::fflush(nullptr);  // what the test runner printed is not the child's
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    std::fputs("buffered line\n", stdout);
    try {  // not captured: the child's stdout is this process's own
      (void)run_process({tmp / "missing"}, {});
    } catch (const Error&) {
    }
    std::fflush(stdout);
    ::_exit(0);
  }
  ::close(out[1]);
  std::string printed;
  char chunk[256];
  for (ssize_t n; (n = ::read(out[0], chunk, sizeof chunk)) > 0;)
    printed.append(chunk, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(printed == "buffered line\n");
}

TEST_CASE("an interrupt while waiting is passed on to the child and reported", "[unit][process]") {
  TempDir tmp;
  ProcessRequest options;
  options.handle_interrupts = true;
  options.exit_grace = 2000ms;
  // The child interrupts kbuild (its parent), then would run on (blocked on
  // a FIFO nobody writes).
  ProcessResult r =
      sh("echo $$ > " + tmp / "pid" + "; kill -TERM $PPID; exec cat " + never_fifo(tmp / "never"),
         options);
  CHECK(r.interrupted_by == SIGTERM);
  CHECK_FALSE(r.success());
  CHECK(r.describe() == "interrupted by signal 15 (Terminated)");
  CHECK(gone(std::stoi(read_file(tmp / "pid"))));
}

TEST_CASE("find_executable: a path as it is, else each PATH directory in order",
          "[unit][process]") {
  TempDir tmp;
  fs::create_directories(tmp / "a");
  fs::create_directories(tmp / "b");
  fs::create_directories(tmp / "c/tool");     // a directory is not a program
  write_file(tmp / "a/tool", "#!/bin/sh\n");  // not executable
  write_file(tmp / "b/tool", "#!/bin/sh\n", true);
  Environment env{{{"PATH", tmp / "c" + ":" + tmp / "a" + ":" + tmp / "b"}}};
  CHECK(find_executable("tool", env) == tmp / "b/tool");
  CHECK(find_executable(tmp / "b/tool", env) == tmp / "b/tool");
  CHECK_FALSE(find_executable(tmp / "a/tool", env));
  CHECK_FALSE(find_executable("missing", env));
  CHECK_FALSE(find_executable("", env));
  // An empty PATH entry is the current directory (execvp's rule).
  Environment dot{{{"PATH", ":/nonexistent"}}};
  const fs::path here = fs::current_path();
  fs::current_path(tmp / "b");
  CHECK(find_executable("tool", dot) == "./tool");
  fs::current_path(here);
  // Without PATH, the default one.
  CHECK(find_executable("sh", Environment()) == "/usr/bin/sh");
}

// real_processes(): the runner a build uses when no fake is given.
TEST_CASE("real_processes runs the program as run_process does", "[unit][process_runner]") {
  ProcessRunner& runner = real_processes();
  CHECK(&runner == &real_processes());  // one for the process
  ProcessRequest options;
  options.capture_output = true;
  ProcessResult r = runner.run({"/bin/sh", "-c", "echo out; echo err >&2; exit 2"}, options);
  CHECK(r.exited);
  CHECK(r.exit_code == 2);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
}

namespace {

// Reads from `fd` (non-blocking) until `want` bytes came or 10 s passed.
std::string process_test_read_some(int fd, std::size_t want) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[256];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  return got;
}

}  // namespace

// start(): a helper kept running (kbuild-http), through the same seam.
TEST_CASE("real_processes starts a helper spoken to through its stdin and stdout",
          "[unit][process_runner]") {
  Result<Coprocess> cat = real_processes().start({"/bin/cat"});
  REQUIRE(cat);
  CHECK(cat->running());
  REQUIRE(::write(cat->to_child(), "hello\n", 6) == 6);
  CHECK(process_test_read_some(cat->from_child(), 6) == "hello\n");
  Coprocess moved = std::move(*cat);
  CHECK_FALSE(cat->running());
  CHECK(moved.running());
  moved.end();  // killed and reaped: no zombie is left
  CHECK_FALSE(moved.running());
  CHECK(moved.to_child() < 0);
}

TEST_CASE("a helper that cannot be started says which and why", "[unit][process_runner]") {
  Result<Coprocess> missing = real_processes().start({"/nonexistent/kbuild-helper"});
  REQUIRE_FALSE(missing);
  CHECK(missing.why().find("/nonexistent/kbuild-helper") != std::string::npos);
  CHECK(missing.why().find("No such file") != std::string::npos);
}

// A test's runner (one that overrides run alone) starts nothing for real.
TEST_CASE("a runner that only fakes run() starts no helper", "[unit][process_runner]") {
  struct ProcessTestOnlyRun : ProcessRunner {
    ProcessResult run(const std::vector<std::string>&, const ProcessRequest&) override {
      return {};
    }
  } fake;
  Result<Coprocess> started = fake.start({"/bin/cat"});
  REQUIRE_FALSE(started);
  CHECK(started.why().find("starts no programs") != std::string::npos);
}
