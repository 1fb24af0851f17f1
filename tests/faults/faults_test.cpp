// Bad input and failures: one clear line, the documented exit code, and
// nothing lost (an earlier output stays as it was, no temporary files).
#include <catch2/catch.hpp>
#include <chrono>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

// Exit codes, as documented in the README.
constexpr int kUsage = 2, kConfig = 3, kProvider = 4, kCompile = 5, kLink = 6, kLoad = 7,
              kInput = 8, kOutput = 9, kCompilerMissing = 10;

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

TEST_CASE("a compiler killed by a signal is reported with the signal", "[faults]") {
  Case c;
  write_file(c.dir / "crashing-g++", "#!/bin/sh\nkill -SEGV $$\n", true);
  RunResult r =
      c.kbuild({"--no-torch", "--cxx", c.dir / "crashing-g++", c.kernel, "-o", c.dir / "k.so"});
  check_error(r, kCompile, "compile", "compile failed (killed by signal 11");
  CHECK_FALSE(fs::exists(c.dir / "k.so"));
  CHECK(c.leftovers().empty());
}

TEST_CASE("a missing compiler: one line, its own exit code", "[faults]") {
  Case c;
  RunResult r = c.kbuild({"--no-torch", "--cxx", "no-such-compiler-xyz", c.kernel});
  check_error(r, kCompilerMissing, "compile", "compiler 'no-such-compiler-xyz' not found");
  CHECK(r.err.find("--cxx") != std::string::npos);
  RunResult env_cxx = c.kbuild({"--no-torch", c.kernel}, {{"CXX", c.dir / "missing/g++"}});
  CHECK(env_cxx.exit_code == kCompilerMissing);
}

TEST_CASE("a missing source, a directory as source, output equal to input", "[faults]") {
  Case c;
  check_error(c.kbuild({"--no-torch", c.dir / "nope.cpp"}), kInput, "usage",
              "nope.cpp: No such file");
  fs::create_directories(c.dir / "adir");
  check_error(c.kbuild({"--no-torch", c.dir / "adir", "-o", c.dir / "x.so"}), kInput, "usage",
              "not a regular file");
  check_error(c.kbuild({"--no-torch", c.kernel, "-o", c.kernel}), kUsage, "usage",
              "is also a source");
  CHECK(read_file(c.kernel).find("return 1") != std::string::npos);
}

TEST_CASE("an output directory that is missing or cannot be written", "[faults]") {
  Case c;
  check_error(c.kbuild({"--no-torch", c.kernel, "-o", c.dir / "missing/k.so"}), kOutput, "usage",
              "does not exist");
  check_error(c.kbuild({"--no-torch", c.kernel, "-o", c.kernel + "/k.so"}), kOutput, "usage",
              "not a directory");
  // Even root cannot create files in /proc: the write is tried, not guessed.
  check_error(c.kbuild({"--no-torch", c.kernel, "-o", "/proc/kbuild-test.so"}), kOutput, "usage",
              "cannot write beside");
  fs::create_directories(c.dir / "out.so");
  check_error(c.kbuild({"--no-torch", c.kernel, "-o", c.dir / "out.so"}), kOutput, "usage",
              "is a directory");
}

TEST_CASE("usage errors: unknown option, bad --isa, conflicting modes, no source", "[faults]") {
  Case c;
  check_error(c.kbuild({"--frobnicate", c.kernel}), kUsage, "usage", "frobnicate");
  check_error(c.kbuild({"--isa", "avx9", c.kernel}), kUsage, "usage", "unknown --isa 'avx9'");
  check_error(c.kbuild({"-c", "--preprocess", c.kernel}), kUsage, "usage", "exclude each other");
  check_error(c.kbuild({"--no-torch"}), kUsage, "usage", "no source given");
}

TEST_CASE("unknown devices: empty options by default, an error with --strict", "[faults]") {
  Case c;
  RunResult lax = c.kbuild({"--no-torch", "--device", "tpu", "--dry-run", c.kernel});
  CHECK(lax.exit_code == 0);
  CHECK(lax.err.find("kbuild: note: unknown device 'tpu'") != std::string::npos);
  check_error(c.kbuild({"--no-torch", "--device", "tpu", "--strict", c.kernel}), kUsage, "usage",
              "unknown device 'tpu' (--strict)");
}

TEST_CASE("npu without ASCEND_HOME_PATH fails with the adapter's message", "[faults]") {
  Case c;
  RunResult r = c.kbuild({"--no-torch", "--device", "npu", c.kernel, "-o", c.dir / "k.so"});
  check_error(r, kProvider, "provider",
              "Could not find ASCEND_HOME_PATH in env. Please run set_env.sh first.");
  CHECK(r.err.find("device 'npu' (") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k.so"));
}

TEST_CASE("xpu without a SYCL runtime is a provider error", "[faults]") {
  Case c;
  check_error(c.kbuild({"--no-torch", "--device", "xpu", "--dry-run", c.kernel},
                       {{"SYCL_HOME", ""}, {"CMPLR_ROOT", ""}}),
              kProvider, "provider", "SYCL runtime is not detected");
}

TEST_CASE("broken device files: malformed JSON, unknown keys, wrong types, missing --config",
          "[faults]") {
  Case c;
  write_file(c.dir / "bad.json", "{\n  \"device\": \"x\"\n  \"libraries\": []\n}");
  check_error(c.kbuild({"--config", c.dir / "bad.json", c.kernel}), kConfig, "config",
              c.dir / "bad.json:3:");
  write_file(c.dir / "typo.json", "{\"device\": \"x\", \"librarys\": []}");
  check_error(c.kbuild({"devices", "--config", c.dir / "typo.json"}), kConfig, "config",
              "unknown key 'librarys'");
  write_file(c.dir / "type.json", "{\"device\": \"x\", \"cflags\": [true]}");
  check_error(c.kbuild({"options", "--config", c.dir / "type.json"}), kConfig, "config",
              "at /cflags/0: expected a string");
  check_error(c.kbuild({"--config", c.dir / "absent.json", c.kernel}), kConfig, "config",
              "no such file");
}

TEST_CASE("a failing exec provider is a provider error with its stderr", "[faults]") {
  Case c;
  write_file(c.dir / "prov.sh", "#!/bin/sh\necho 'driver not loaded' >&2\nexit 9\n", true);
  write_file(c.dir / "dev.json", "{\"device\": \"ext\", \"exec\": {\"command\": [\"./prov.sh\"]}}");
  RunResult r =
      c.kbuild({"--no-torch", "--config", c.dir / "dev.json", "--device", "ext", c.kernel});
  check_error(r, kProvider, "provider", "exit code 9");
  CHECK(r.err.find("driver not loaded") != std::string::npos);
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
  CHECK(argv.find("\n-I; rm -rf ~\n") != std::string::npos);
  CHECK(argv.find("\n-I$(touch " + c.dir / "pwned" + ")\n") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "pwned"));
}

TEST_CASE(
    "SIGTERM during a build ends the compiler, removes the temporary and keeps the old output",
    "[faults]") {
  Case c;
  write_file(c.dir / "k.so", "old library");
  // A compiler that starts writing its output, says so, then takes its time.
  write_file(c.dir / "slow-g++",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; echo partial > "
             "\"$1\"; fi; shift; done\n"
             "touch \"$MARKER\"\nsleep 30\n",
             true);
  auto start = std::chrono::steady_clock::now();
  // SIGTERM to kbuild once its compiler runs; the shell reports kbuild's status.
  RunResult r = run({"/bin/sh", "-c",
                     "\"$@\" & pid=$!; while [ ! -f \"$MARKER\" ]; do sleep 0.05; done; "
                     "kill -TERM $pid; wait $pid",
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
  write_file(c.dir / "slow-g++",
             "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; echo partial > "
             "\"$1\"; fi; shift; done\ntouch \"$MARKER\"\nexec sleep 61\n",
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
