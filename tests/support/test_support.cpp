#include "test_support.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

extern char** environ;

namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace kbuild_test {

namespace {

// Only stdio crosses exec (Boost 1.81 leaves some of the parent's fds open:
// a kbuild that left a child behind would then keep the test's pipes open).
struct StdioOnly {
  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const bp::filesystem::path&, const char* const*&) {
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    return {};
  }
};

}  // namespace

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  fs::path root = base && *base ? base : "/tmp";
  std::mt19937_64 rng{std::random_device{}()};
  for (int i = 0; i < 100; ++i) {
    fs::path candidate = root / ("kbuild-test-" + std::to_string(getpid()) + "-" +
                                 std::to_string(rng() % 100000000));
    std::error_code ec;
    if (fs::create_directory(candidate, ec)) {
      path_ = fs::canonical(candidate);
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
  std::error_code ec;
  // Restore permissions a test may have removed, then delete.
  for (auto it = fs::recursive_directory_iterator(path_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_directory(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

bool has(const std::vector<std::string>& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

void write_file(const fs::path& path, const std::string& text, bool executable) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  REQUIRE(out.good());
  if (executable)
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, std::string> environment_with(const std::map<std::string, std::string>& set,
                                                    const std::vector<std::string>& unset) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : set) vars[k] = v;
  for (const auto& k : unset) vars.erase(k);
  return vars;
}

RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& set,
              const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (const auto& [k, v] : environment_with(set, unset)) env.push_back(k + "=" + v);

  asio::io_context ctx;
  asio::readable_pipe out(ctx), err(ctx);
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  bp::process proc(ctx, argv[0], args, bp::process_stdio{nullptr, out, err},
                   bp::process_environment(env), StdioOnly{});
  RunResult r;
  // Reads a pipe to EOF; lives on this stack frame until ctx.run() returns.
  struct Reader {
    asio::readable_pipe& pipe;
    std::string& sink;
    std::array<char, 8192> buf{};
    void start() {
      pipe.async_read_some(asio::buffer(buf), [this](bp::error_code ec, std::size_t n) {
        sink.append(buf.data(), n);
        if (!ec) start();
      });
    }
  };
  Reader out_reader{out, r.out}, err_reader{err, r.err};
  out_reader.start();
  err_reader.start();
  ctx.run();
  proc.wait();
  int status = proc.native_exit_code();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return r;
}

void record_daemon(int pid, const std::string& what) {
  const char* dir = std::getenv("KBUILD_TEST_DAEMONS_DIR");
  if (!dir || !*dir) return;
  // Field 22 of /proc/PID/stat, the 20th after the command's closing ")";
  // "unknown" (blamed whenever the pid is alive) should it not be there.
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  std::string start = "unknown";
  if (close != std::string::npos) {
    std::istringstream after(stat.substr(close + 1));
    std::string field;
    for (int i = 0; i < 20 && after >> field; ++i)
      if (i == 19) start = field;
  }
  // Never a REQUIRE: a throw here would leave the daemon running unowned.
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream(fs::path(dir) / (std::to_string(pid) + "." + start)) << what << "\n";
}

struct BackgroundProcess::State {
  asio::io_context ctx;
  std::optional<bp::process> proc;
  // The read end of its stdout when waited for: kept open to the end, so
  // that what it prints later never meets a closed pipe.
  int output = -1;
};

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::string& ready)
    : state_(std::make_unique<State>()) {
  std::vector<std::string> args(argv.begin() + 1, argv.end());
  int pipe_fds[2] = {-1, -1};
  if (!ready.empty()) REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  if (ready.empty())
    state_->proc.emplace(state_->ctx, argv[0], args, bp::process_stdio{nullptr, nullptr, nullptr},
                         StdioOnly{});
  else
    state_->proc.emplace(state_->ctx, argv[0], args,
                         bp::process_stdio{nullptr, pipe_fds[1], nullptr}, StdioOnly{});
  std::string what;
  for (const std::string& arg : argv) what += (what.empty() ? "" : " ") + arg;
  record_daemon(state_->proc->id(), what);
  if (ready.empty()) return;
  ::close(pipe_fds[1]);
  state_->output = pipe_fds[0];
  std::string printed;
  char chunk[4096];
  while (printed.find(ready) == std::string::npos) {
    ssize_t n = ::read(state_->output, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) FAIL(what << " ended before printing '" << ready << "':\n" << printed);
    printed.append(chunk, static_cast<std::size_t>(n));
  }
}

bool BackgroundProcess::running() {
  return state_->proc && state_->proc->running();
}

BackgroundProcess::~BackgroundProcess() {
  if (state_->proc) {
    ::kill(state_->proc->id(), SIGTERM);
    bp::error_code ec;
    state_->proc->wait(ec);
  }
  if (state_->output >= 0) ::close(state_->output);
}

std::string never_fifo(const fs::path& path) {
  if (::mkfifo(path.c_str(), 0600) != 0) REQUIRE((errno == EEXIST && fs::is_fifo(path)));
  return path.string();
}

bool ends_within(int pid, int bound_ms) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;  // gone already (and reaped)
  struct pollfd ended {
    fd, POLLIN, 0
  };
  int n;
  while ((n = ::poll(&ended, 1, bound_ms)) < 0 && errno == EINTR) {
  }
  ::close(fd);
  return n == 1;
}

std::string kbuild_binary() {
  // KBUILD_TEST_BIN: another build's kbuild under the same tests (scripts/test
  // runs e2e and faults against the sanitized binary); Meson's test
  // environment sets KBUILD_BIN, which an outer variable cannot override.
  const char* other = std::getenv("KBUILD_TEST_BIN");
  if (other && *other) return other;
  const char* bin = std::getenv("KBUILD_BIN");
  REQUIRE(bin != nullptr);
  return bin;
}

std::string source_root() {
  const char* root = std::getenv("KBUILD_SOURCE_ROOT");
  REQUIRE(root != nullptr);
  return root;
}

RunResult run_kbuild(const std::vector<std::string>& args, const std::string& home,
                     std::map<std::string, std::string> set, std::vector<std::string> unset) {
  std::vector<std::string> argv{kbuild_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  make_hermetic(home, set, unset);
  return run(argv, set, unset);
}

void make_hermetic(const std::string& home, std::map<std::string, std::string>& set,
                   std::vector<std::string>& unset) {
  set.emplace("HOME", home);
  set.emplace("XDG_CONFIG_HOME", home + "/.config");
  set.emplace("XDG_CACHE_HOME", home + "/.cache");
  for (const char* var :
       {"KBUILD_CONFIG_PATH", "KBUILD_TORCH_ROOT", "KBUILD_TORCH_NPU_ROOT", "KBUILD_CACHE_DIR",
        "CXX", "CUDA_HOME", "ASCEND_HOME_PATH", "LIBTORCH_NPU_PATH", "ATEN_CPU_CAPABILITY",
        "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"})
    if (!set.count(var)) unset.push_back(var);
}

void compile_shared_library(const std::string& source_text, const std::string& output,
                            const std::string& soname, const std::vector<std::string>& extra) {
  fs::create_directories(fs::path(output).parent_path());
  std::string src = output + ".src.cpp";
  write_file(src, source_text);
  std::vector<std::string> argv{"/usr/bin/g++", "-shared", "-fPIC", "-o", output, src};
  if (!soname.empty()) argv.push_back("-Wl,-soname," + soname);
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  fs::remove(src);
}

void make_fake_torch(const std::string& root, bool with_libs) {
  fs::create_directories(root + "/include/torch/csrc/api/include");
  fs::create_directories(root + "/lib");
  write_file(root + "/__init__.py", "");
  write_file(root + "/version.py", "__version__ = '2.11.0'\nhip: Optional[str] = None\n");
  if (!with_libs) return;
  for (const char* lib : {"torch", "torch_cpu", "torch_python"})
    compile_shared_library(
        std::string("extern \"C\" int kbuild_fake_") + lib + "() { return 1; }\n",
        root + "/lib/lib" + lib + ".so", std::string("lib") + lib + ".so");
}

int call_f(const std::string& library) {
  static int n = 0;
  std::string copy = library + ".load" + std::to_string(++n) + ".so";
  fs::copy_file(library, copy, fs::copy_options::overwrite_existing);
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  INFO(dlerror());
  REQUIRE(handle != nullptr);
  auto f = reinterpret_cast<int (*)()>(dlsym(handle, "f"));
  REQUIRE(f != nullptr);
  int value = f();
  dlclose(handle);
  fs::remove(copy);
  return value;
}

std::string acc_device_file(const std::vector<std::string>& more_releases, bool release_env) {
  std::string text = R"({
  "device": "acc",
  "definitions": ["USE_ACC"],
  "libraries": ["acc_rt"],
  "backends": {"fast": {}, "plain": {}},
  "default_backend": "fast",
  "package": {"name": "torch_acc", "root": "${env:ACC_ROOT}", "version_file": "version.py",
              "library": "lib/libtorch_acc.so", "source_checkout_mark": "../setup.py"},
  "plugin": {
    "backend_env": "ACC_BACKEND",
    "backends": {
      "fast": {
        "base": [{"list": "cflags", "drop": "march=native"},
                 {"list": "cflags", "replace": "O3", "with": "O2"}],
        "device_options": {"unless_env": {"ACC_NO_PATCH": "1"},
                           "every_device": {"include_dirs": ["/acc/every"]}}
      },
      "plain": {"note": "patches nothing"}
    },
)";
  if (release_env) text += "    \"release_env\": \"ACC_RELEASE\",\n";
  text += R"(    "releases": {
      "1.0.0": {},
      "1.0.0.post1": {"every_device": {"include_dirs": ["/acc/every-post1"]},
                      "device": {"libraries": ["acc_rt2"]}, "notes": {"plain": "post1 note"}},
      "2.0.0": {})";
  for (const std::string& release : more_releases) text += ",\n      " + release;
  return text + "\n    }\n  }\n}";
}

}  // namespace kbuild_test
