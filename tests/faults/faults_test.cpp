// Bad input and failures: one clear line, the documented exit code, and
// nothing lost (an earlier output stays as it was, no temporary files).
#include <dlfcn.h>

#include <elf.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

// Exit codes, as documented in docs/errors.md (and the README, and kbuild.1).
constexpr int kUsage = 2, kProvider = 4, kCompile = 5;

// kbuild's own error line (the compiler's diagnostics may come before it).
std::string error_line(const std::string& err) {
  auto at = err.find("kbuild: error[");
  if (at == std::string::npos || (at > 0 && err[at - 1] != '\n')) return "";
  return err.substr(at, err.find('\n', at) - at);
}

struct Case {
  TempDir home, dir;
  std::string kernel;
  Case() : kernel(dir / "kernel.cpp") {
    write_file(kernel, "extern \"C\" int f() { return 1; }\n");
  }
  RunResult kbuild(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    return run_kbuild(std::move(args), home.str(), std::move(env));
  }
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    for (auto& e : fs::directory_iterator(dir.path()))
      if (e.path().filename().string().find("kbuild-tmp") != std::string::npos)
        out.push_back(e.path());
    return out;
  }
};

void check_error(const RunResult& r, int code, const std::string& stage, const std::string& text) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == code);
  std::string line = error_line(r.err);
  CHECK(line.find("kbuild: error[" + stage + "]: ") == 0);
  CHECK(line.find(text) != std::string::npos);
}

}  // namespace

TEST_CASE("a failed build leaves the older library untouched and no temporary files", "[faults]") {
  Case c;
  REQUIRE(c.kbuild({"--no-torch", c.kernel, "-o", c.dir / "kernel.so"}).exit_code == 0);
  std::string before = read_file(c.dir / "kernel.so");
  write_file(c.kernel, "extern \"C\" int f() { return }\n");  // a syntax error
  RunResult r = c.kbuild({"--no-torch", c.kernel, "-o", c.dir / "kernel.so"});
  check_error(r, kCompile, "compile", "compile failed (exit code 1): ");
  CHECK(r.err.find("kernel.cpp:1:") != std::string::npos);  // g++'s own diagnostics pass through
  CHECK(read_file(c.dir / "kernel.so") == before);
  CHECK(c.leftovers().empty());
}

TEST_CASE("a broken device file in a shared directory: the error names it and how to skip it",
          "[faults]") {
  Case c;
  const std::string dir = c.home / ".config/kbuild/devices.d";
  write_file(dir + "/broken.json", "{\"device\": \"x\",\n");
  RunResult r = c.kbuild({"--no-torch", c.kernel, "-o", c.dir / "k.so"});
  check_error(r, 3, "config", dir + "/broken.json:2:1: malformed JSON");
  CHECK(error_line(r.err).find("every build reads " + dir +
                               ": fix the file, or rename it without .json to skip it") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k.so"));
  // Renamed as the error says: the build goes on.
  fs::rename(dir + "/broken.json", dir + "/broken.json.off");
  CHECK(c.kbuild({"--no-torch", c.kernel, "-o", c.dir / "k.so"}).exit_code == 0);
}

TEST_CASE("unknown devices: empty options by default, an error with --strict", "[faults]") {
  Case c;
  RunResult lax = c.kbuild({"--no-torch", "--device", "tpu", "--dry-run", c.kernel});
  CHECK(lax.exit_code == 0);
  CHECK(lax.err.find("kbuild: note: unknown device 'tpu'") != std::string::npos);
  check_error(c.kbuild({"--no-torch", "--device", "tpu", "--strict", c.kernel}), kUsage, "usage",
              "unknown device 'tpu' (--strict)");
}

TEST_CASE("xpu without a SYCL runtime is a provider error", "[faults]") {
  Case c;
  check_error(c.kbuild({"--no-torch", "--device", "xpu", "--dry-run", c.kernel},
                       {{"SYCL_HOME", ""}, {"CMPLR_ROOT", ""}}),
              kProvider, "provider", "SYCL runtime is not detected");
}

TEST_CASE("a config value like '; rm -rf ~' or '$(...)' is one literal argument", "[faults]") {
  Case c;
  write_file(c.dir / "evil.json",
             "{\"device\": \"evil\", \"include_dirs\": [\"; rm -rf ~\", \"$$(touch " +
                 c.dir / "pwned" + ")\"]}");
  write_file(
      c.dir / "record-g++",
      "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGV_FILE\"\nexit 1\n",
      true);
  RunResult r = c.kbuild({"--no-torch", "--config", c.dir / "evil.json", "--device", "evil",
                          "--cxx", c.dir / "record-g++", c.kernel, "-o", c.dir / "k.so"},
                         {{"ARGV_FILE", c.dir / "argv.txt"}});
  CHECK(r.exit_code == kCompile);
  std::string argv = read_file(c.dir / "argv.txt");
  // Relative include dirs are relative to the device file, c.dir.
  CHECK(argv.find("\n-I" + c.dir / "; rm -rf ~" + "\n") != std::string::npos);
  CHECK(argv.find("\n-I" + c.dir / "$(touch " + c.dir / "pwned" + ")\n") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "pwned"));
}

TEST_CASE(
    "SIGTERM or SIGINT during a build ends the compiler, removes the temporary, keeps the old "
    "output",
    "[faults]") {
  const std::string sig = GENERATE(std::string("TERM"), std::string("INT"));
  INFO("SIG" << sig);
  Case c;
  write_file(c.dir / "k.so", "old library");
  // A compiler that starts writing its output, says so, then takes its time.
  write_file(c.dir / "slow-g++",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; echo partial > "
             "\"$1\"; fi; shift; done\n"
             "touch \"$MARKER\"\nsleep 30\n",
             true);
  auto start = std::chrono::steady_clock::now();
  // The signal to kbuild once its compiler runs; the shell reports kbuild's status.
  RunResult r = run({"/bin/sh", "-c",
                     "\"$@\" & pid=$!; while [ ! -f \"$MARKER\" ]; do sleep 0.05; done; "
                     "kill -" +
                         sig + " $pid; wait $pid",
                     "sh", kbuild_binary(), "--no-torch", "--cxx", c.dir / "slow-g++", c.kernel,
                     "-o", c.dir / "k.so"},
                    {{"HOME", c.home.str()}, {"MARKER", c.dir / "started"}});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.exit_code == 130);
  CHECK(r.err.find("kbuild: error[interrupted]: ") != std::string::npos);
  CHECK(took < 10);  // the sleeping compiler was ended, not waited for
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().empty());
}

TEST_CASE("--timeout ends a compiler that never finishes; the old output stays", "[faults]") {
  Case c;
  write_file(c.dir / "k.so", "old library");
  write_file(c.dir / "hanging-g++", "#!/bin/sh\nsleep 60\n", true);
  auto start = std::chrono::steady_clock::now();
  RunResult r = c.kbuild({"--no-torch", "--no-cache", "--cxx", c.dir / "hanging-g++", "--timeout",
                          "1", c.kernel, "-o", c.dir / "k.so"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check_error(r, kCompile, "compile", "ran past --timeout 1");
  CHECK(took < 15);
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().empty());
  CHECK(c.kbuild({"--no-torch", "--timeout", "0", c.kernel}).exit_code == kUsage);
}

TEST_CASE("SIGKILL of kbuild leaves the old output; the next build removes the stale temporary",
          "[faults]") {
  Case c;
  write_file(c.dir / "k.so", "old library");
  write_file(
      c.dir / "slow-g++",
      "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; echo partial > "
      "\"$1\"; fi; shift; done\ntouch \"$MARKER\"\nexec sleep 61 >/dev/null 2>&1\n",  // holds no
                                                                                      // pipe of
                                                                                      // ours
      true);
  RunResult killed = run({"/bin/sh", "-c",
                          "\"$@\" & pid=$!; while [ ! -f \"$MARKER\" ]; do sleep 0.05; done; "
                          "kill -KILL $pid; wait $pid",
                          "sh", kbuild_binary(), "--no-torch", "--no-cache", "--cxx",
                          c.dir / "slow-g++", c.kernel, "-o", c.dir / "k.so"},
                         {{"HOME", c.home.str()}, {"MARKER", c.dir / "started"}});
  CHECK(killed.exit_code == 128 + 9);                 // the shell's report of a SIGKILLed child
  run({"/usr/bin/pkill", "-f", c.dir / "slow-g++"});  // the orphaned compiler
  run({"/usr/bin/pkill", "-x", "-f", "sleep 61"});
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().size() == 1);  // what the killed run could not remove
  RunResult next = c.kbuild({"--no-torch", "--no-cache", c.kernel, "-o", c.dir / "k.so"});
  INFO(next.err);
  CHECK(next.exit_code == 0);
  CHECK(c.leftovers().empty());
  CHECK(read_file(c.dir / "k.so").substr(1, 3) == "ELF");
}

// A whole ELF file ends where its section headers end; a torn write does not.
bool is_complete_elf(const std::string& bytes) {
  Elf64_Ehdr header;
  if (bytes.size() < sizeof header) return false;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return false;
  return bytes.size() == header.e_shoff + size_t{header.e_shnum} * header.e_shentsize;
}

TEST_CASE("16 concurrent builds of one output: each succeeds, the file is never torn", "[faults]") {
  Case c;
  const std::string output = c.dir / "k.so";
  // Sixteen different kernels, one output; no cache, so each really links.
  std::vector<std::string> sources;
  for (int i = 0; i < 16; ++i) {
    sources.push_back(c.dir / ("kernel" + std::to_string(i) + ".cpp"));
    write_file(sources.back(), "extern \"C\" int f() { return " + std::to_string(i) + "; }\n");
  }
  std::atomic<bool> done{false};
  int torn = 0, seen = 0;
  std::thread watcher([&] {
    while (!done) {
      std::error_code ec;
      if (fs::exists(output, ec)) {
        ++seen;
        if (!is_complete_elf(read_file(output))) ++torn;
      }
    }
  });
  std::vector<RunResult> results(16);
  std::vector<std::thread> builds;
  for (int i = 0; i < 16; ++i)
    builds.emplace_back([&, i] {
      results[i] = c.kbuild({"--no-torch", "--no-cache", sources[i], "-o", output});
    });
  for (auto& b : builds) b.join();
  done = true;
  watcher.join();
  for (const RunResult& r : results) {
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  CHECK(seen > 0);
  CHECK(torn == 0);
  CHECK(c.leftovers().empty());
  void* handle = dlopen(output.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  auto f = reinterpret_cast<int (*)()>(dlsym(handle, "f"));
  REQUIRE(f != nullptr);
  int value = f();
  CHECK(value >= 0);
  CHECK(value < 16);
  dlclose(handle);
}

TEST_CASE("a compiler that leaves a daemon behind does not keep kbuild waiting", "[faults]") {
  // Like an sccache server: started by the compiler, stdio on /dev/null, it
  // outlives the build. Only inherited pipe ends could make kbuild wait.
  Case c;
  write_file(c.dir / "daemonizing-g++",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; cp /bin/true "
             "\"$1\"; fi; shift; done\nsleep 37 </dev/null >/dev/null 2>&1 &\nexit 0\n",
             true);
  auto start = std::chrono::steady_clock::now();
  RunResult r = c.kbuild({"--no-torch", "--no-cache", "--cxx", c.dir / "daemonizing-g++", c.kernel,
                          "-o", c.dir / "k.so"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run({"/usr/bin/pkill", "-x", "-f", "sleep 37"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(took < 10);
  CHECK(read_file(c.dir / "k.so") == read_file("/bin/true"));
}

namespace {

// Processes of process group `pgid` that are still alive (zombies are dead:
// nothing here reaps the orphans a killed compiler leaves).
int live_members(int pgid) {
  int live = 0;
  for (auto& e : fs::directory_iterator("/proc")) {
    std::string stat;
    try {
      stat = read_file(e.path() / "stat");
    } catch (...) {
      continue;
    }
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, group = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &group) == 3 &&
        group == pgid && state != 'Z' && state != 'X')
      ++live;
  }
  return live;
}

// A compiler whose group (its pid) is written to $MARKER once it runs. It
// leaves `background` running (a shell fragment ending in '&').
std::string compiler_with_background(const std::string& background) {
  return "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; out=$1; echo "
         "partial > \"$1\"; fi; shift; done\n" +
         background + "\necho $$ > \"$MARKER.tmp\"; mv \"$MARKER.tmp\" \"$MARKER\"\n";
}

// Runs kbuild with `args`; once $MARKER exists, sends it `signal` (none: "").
RunResult kbuild_signalled(const Case& c, const std::string& signal,
                           const std::vector<std::string>& args) {
  std::vector<std::string> argv{
      "/bin/sh", "-c",
      "\"$@\" & pid=$!; while [ ! -f \"$MARKER\" ]; do sleep 0.05; done; " +
          (signal.empty() ? std::string() : "kill -" + signal + " $pid; ") + "wait $pid",
      "sh", kbuild_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, {{"HOME", c.home.str()}, {"MARKER", c.dir / "started"}});
}

int compiler_group(const Case& c) {
  return std::atoi(read_file(c.dir / "started").c_str());
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("--timeout holds when the compiler's background child keeps its stdout open",
          "[faults]") {
  Case c;
  write_file(c.dir / "k.so", "old library");
  // Exits at once, but a child it leaves behind holds kbuild's pipes.
  write_file(c.dir / "holding-g++", compiler_with_background("sleep 20 &") + "exit 0\n", true);
  auto start = std::chrono::steady_clock::now();
  RunResult r = kbuild_signalled(c, "",
                                 {"--no-torch", "--no-cache", "--cxx", c.dir / "holding-g++",
                                  "--timeout", "1", c.kernel, "-o", c.dir / "k.so"});
  double took = seconds_since(start);
  check_error(r, kCompile, "compile", "ran past --timeout 1");
  CHECK(took < 8);
  CHECK(live_members(compiler_group(c)) == 0);
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().empty());
}

TEST_CASE("SIGTERM or SIGINT while a background child holds the compiler's pipes: 130, group ended",
          "[faults]") {
  const std::string sig = GENERATE(std::string("TERM"), std::string("INT"));
  INFO("SIG" << sig);
  Case c;
  write_file(c.dir / "k.so", "old library");
  write_file(c.dir / "holding-g++", compiler_with_background("sleep 20 &") + "exit 0\n", true);
  auto start = std::chrono::steady_clock::now();
  RunResult r = kbuild_signalled(
      c, sig,
      {"--no-torch", "--no-cache", "--cxx", c.dir / "holding-g++", c.kernel, "-o", c.dir / "k.so"});
  double took = seconds_since(start);
  INFO(r.err);
  CHECK(r.exit_code == 130);
  CHECK(r.err.find("kbuild: error[interrupted]: ") != std::string::npos);
  CHECK(took < 8);
  CHECK(live_members(compiler_group(c)) == 0);
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().empty());
}

TEST_CASE("SIGHUP or SIGQUIT during a build ends the compiler and removes the temporary",
          "[faults]") {
  const std::string sig = GENERATE(std::string("HUP"), std::string("QUIT"));
  INFO("SIG" << sig);
  Case c;
  write_file(c.dir / "k.so", "old library");
  write_file(c.dir / "slow-g++", compiler_with_background("") + "sleep 20\n", true);
  RunResult r = kbuild_signalled(
      c, sig,
      {"--no-torch", "--no-cache", "--cxx", c.dir / "slow-g++", c.kernel, "-o", c.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 130);
  CHECK(r.err.find("kbuild: error[interrupted]: ") != std::string::npos);
  CHECK(live_members(compiler_group(c)) == 0);
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().empty());
}

TEST_CASE("after an interrupt kbuild waits until the compiler's group is gone, then cleans up",
          "[faults]") {
  Case c;
  write_file(c.dir / "k.so", "old library");
  // A "linker" (no pipes of kbuild's) that finishes writing the output when
  // told to stop: kbuild must remove the temporary only after it is gone.
  write_file(c.dir / "linking-g++",
             compiler_with_background("(trap 'sleep 0.5; echo late > \"$out\"; exit 1' TERM; "
                                      "sleep 20 & wait) </dev/null >/dev/null 2>&1 &") +
                 "sleep 20\n",
             true);
  RunResult r = kbuild_signalled(
      c, "TERM",
      {"--no-torch", "--no-cache", "--cxx", c.dir / "linking-g++", c.kernel, "-o", c.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 130);
  CHECK(live_members(compiler_group(c)) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // a late write would land now
  CHECK(read_file(c.dir / "k.so") == "old library");
  CHECK(c.leftovers().empty());
}

TEST_CASE("SIGINT or SIGTERM while an exec provider runs ends its group and exits 130",
          "[faults]") {
  const std::string sig = GENERATE(std::string("INT"), std::string("TERM"));
  INFO("SIG" << sig);
  Case c;
  write_file(c.dir / "k.so", "old library");
  write_file(c.dir / "provider.sh", compiler_with_background("sleep 20 &") + "wait\n", true);
  write_file(c.dir / "ext.json",
             "{\"device\": \"ext\", \"exec\": {\"command\": [\"./provider.sh\"]}}");
  auto start = std::chrono::steady_clock::now();
  RunResult r = kbuild_signalled(c, sig,
                                 {"--no-torch", "--no-cache", "--config", c.dir / "ext.json",
                                  "--device", "ext", c.kernel, "-o", c.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 130);
  CHECK(r.err.find("kbuild: error[interrupted]: ") != std::string::npos);
  CHECK(seconds_since(start) < 8);
  CHECK(live_members(compiler_group(c)) == 0);
  CHECK(read_file(c.dir / "k.so") == "old library");
}

TEST_CASE("Ctrl-C on build-many is passed on to every build, which ends its compiler", "[faults]") {
  Case c;
  // Each compiler notes its group in compilers/PID, then takes its time.
  fs::create_directories(c.dir / "compilers");
  write_file(c.dir / "slow-g++",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; echo partial > "
             "\"$1\"; fi; shift; done\ntouch \"$GROUPS_DIR/$$\"\nsleep 20\n",
             true);
  std::string builds;
  for (const char* name : {"a", "b"}) {
    write_file(c.dir / (std::string(name) + ".so"), "old library");
    builds += std::string(builds.empty() ? "" : ", ") + "[\"" + c.kernel + "\", \"-o\", \"" +
              c.dir / (std::string(name) + ".so") + "\"]";
  }
  write_file(c.dir / "m.json", "{\"common\": [\"--no-torch\", \"--no-cache\", \"--cxx\", \"" +
                                   c.dir / "slow-g++" + "\"], \"builds\": [" + builds + "]}");
  auto start = std::chrono::steady_clock::now();
  RunResult r = run({"/bin/sh", "-c",
                     "\"$@\" & pid=$!; while [ $(ls \"$GROUPS_DIR\" | wc -l) -lt 2 ]; do sleep "
                     "0.05; done; kill -INT $pid; wait $pid",
                     "sh", kbuild_binary(), "build-many", c.dir / "m.json", "-j", "2"},
                    {{"HOME", c.home.str()}, {"GROUPS_DIR", c.dir / "compilers"}});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 130);
  CHECK(seconds_since(start) < 10);
  for (auto& e : fs::directory_iterator(c.dir / "compilers"))
    CHECK(live_members(std::atoi(e.path().filename().c_str())) == 0);
  CHECK(read_file(c.dir / "a.so") == "old library");
  CHECK(read_file(c.dir / "b.so") == "old library");
  CHECK(c.leftovers().empty());
}

TEST_CASE("a closed stderr while the compiler's diagnostics pass through does not kill kbuild",
          "[faults]") {
  Case c;
  write_file(c.dir / "k.so", "old library");
  write_file(c.dir / "chatty-g++",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; cp /bin/true "
             "\"$1\"; fi; shift; done\ni=0; while [ $i -lt 3000 ]; do echo \"warning: line $i\" "
             ">&2; i=$((i+1)); done\nsleep 0.5\n",
             true);
  // kbuild's stdout and stderr: a pipe whose reader is gone after one byte.
  RunResult r = run({"/bin/sh", "-c", "{ \"$@\"; echo $? > \"$STATUS\"; } 2>&1 | head -c 1", "sh",
                     kbuild_binary(), "--no-torch", "--no-cache", "--cxx", c.dir / "chatty-g++",
                     c.kernel, "-o", c.dir / "k.so"},
                    {{"HOME", c.home.str()}, {"STATUS", c.dir / "status"}});
  CHECK(read_file(c.dir / "status") == "0\n");
  CHECK(read_file(c.dir / "k.so") == read_file("/bin/true"));
  CHECK(c.leftovers().empty());
}
