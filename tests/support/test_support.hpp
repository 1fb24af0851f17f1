// Helpers shared by the test layers: temporary trees, files, and running real
// processes (the kbuild binary, g++) with a controlled environment.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kbuild_test {

namespace fs = std::filesystem;

// A fresh directory under $TMPDIR, removed (with its contents) on scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, const std::string& text, bool executable = false);

// Whether `words` holds `word` (a command line, a list of flags).
bool has(const std::vector<std::string>& words, const std::string& word);
std::string read_file(const fs::path& path);

struct RunResult {
  int exit_code = -1;  // -signal when killed by a signal
  std::string out;
  std::string err;
};

// Runs argv (argv[0] a path) with this process's environment plus `set`,
// minus `unset`; captures stdout and stderr.
RunResult run(const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& set = {},
              const std::vector<std::string>& unset = {});

// Records `pid`, a daemon a test started, in $KBUILD_TEST_DAEMONS_DIR (set
// by tests/meson.build) as a file named PID.STARTTIME (its start time in
// /proc/PID/stat, so that a reused pid is never mistaken for it), holding
// `what`. scripts/check-daemons blames a recorded daemon still running
// after the suite. Nothing is recorded when the variable is unset or empty.
void record_daemon(int pid, const std::string& what);

// A program running in the background for the life of the object (a
// server a test talks to), its output discarded; ended with SIGTERM.
// Recorded as a daemon (record_daemon). With `ready`, the constructor
// reads its stdout until a line holds `ready` (a server saying it accepts
// connections: an event to wait on, not a poll with sleeps), and fails the
// test, with what it printed, when the program ends first.
class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& argv, const std::string& ready = "");
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  bool running();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Makes a FIFO at `path` that nothing opens for writing, and returns the
// path: a child that must hang until it is killed reads it (`exec cat
// PATH`), blocked on an event that never comes, instead of sleeping.
std::string never_fifo(const fs::path& path);

// Whether process `pid` (not necessarily a child of this one) ends within
// `bound_ms`: waited for on its pidfd, not polled.
bool ends_within(int pid, int bound_ms);

// The binary under test and the project's source tree (set by meson).
std::string kbuild_binary();
std::string source_root();

// Runs kbuild with a hermetic environment: HOME, XDG dirs and the cache point
// into `home`, so no user config leaks in.
RunResult run_kbuild(const std::vector<std::string>& args, const std::string& home,
                     std::map<std::string, std::string> set = {},
                     std::vector<std::string> unset = {});
// That environment's changes: HOME and the XDG dirs into `home` (unless in
// `set`), the user's kbuild and compiler variables in `unset`.
void make_hermetic(const std::string& home, std::map<std::string, std::string>& set,
                   std::vector<std::string>& unset);
// This process's environment with `set` set and `unset` removed.
std::map<std::string, std::string> environment_with(const std::map<std::string, std::string>& set,
                                                    const std::vector<std::string>& unset);

// Compiles `source_text` into a shared library at `output` with g++
// (-shared -fPIC), with `soname` when given. Fails the test on error.
void compile_shared_library(const std::string& source_text, const std::string& output,
                            const std::string& soname = "",
                            const std::vector<std::string>& extra = {});

// Loads a copy of `library` (a fresh name: dlopen would reuse one already
// loaded) and returns what its extern "C" int f() returns. Fails the test
// when it does not load or has no f.
int call_f(const std::string& library);

// A fake torch package tree under `root`: include/, lib/ with stub
// libtorch.so, libtorch_cpu.so, libtorch_python.so (when `with_libs`).
void make_fake_torch(const std::string& root, bool with_libs);

// "acc": a device file with package and plugin sections, the unit tests'
// second out-of-tree package (not torch_npu: it needs no C++). Releases
// 1.0.0, 1.0.0.post1 and 2.0.0, then each of `more_releases` (a JSON member,
// `"name": {...}`), one per line; "release_env": "ACC_RELEASE" when
// `release_env`. Error lines in tests count on this layout.
std::string acc_device_file(const std::vector<std::string>& more_releases = {},
                            bool release_env = false);

}  // namespace kbuild_test
