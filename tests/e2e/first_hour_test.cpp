// The first hour with kbuild (issue 14): what a newcomer types, and what
// kbuild must answer. Each case is a bug or a rough edge found by trying it.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;
using json = nlohmann::json;

namespace {

const std::string kKernel = "extern \"C\" int f() { return 1; }\n";

// A scratch directory with kernel.cpp in it, and a home of its own.
struct Scratch {
  TempDir home, dir;
  std::string kernel = dir / "kernel.cpp";
  Scratch() { write_file(kernel, kKernel); }

  // kbuild ARGS, run in this directory (paths relative to it).
  RunResult here(const std::vector<std::string>& args,
                 std::map<std::string, std::string> set = {}) const {
    std::vector<std::string> argv{"-C", dir.str(), kbuild_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    set.emplace("HOME", home.str());
    set.emplace("XDG_CONFIG_HOME", home / ".config");
    set.emplace("XDG_CACHE_HOME", home / ".cache");
    std::vector<std::string> unset;
    for (const char* var : {"KBUILD_CONFIG_PATH", "KBUILD_TORCH_ROOT", "KBUILD_TORCH_NPU_ROOT",
                            "KBUILD_CACHE_DIR", "CXX", "ASCEND_HOME_PATH", "LIBTORCH_NPU_PATH"})
      if (!set.count(var)) unset.push_back(var);
    argv.insert(argv.begin(), "/usr/bin/env");
    return run(argv, set, unset);
  }
  RunResult kbuild(const std::vector<std::string>& args,
                   std::map<std::string, std::string> set = {}) const {
    return run_kbuild(args, home.str(), std::move(set));
  }
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("--check-load with -o softmax.so (no slash) loads the library", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.here({"--no-torch", "kernel.cpp", "-o", "softmax.so", "--check-load"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(s.dir / "softmax.so"));
}

TEST_CASE("a device file's cflags entry with a leading '-' is warned about at load, with file:line",
          "[e2e][first-hour]") {
  Scratch s;
  std::string file = s.dir / "acc.json";
  write_file(file,
             "{\n  \"device\": \"acc\",\n  \"cflags\": [\"funroll-all-loops\",\n"
             "             \"-funroll-loops\"]\n}\n");
  RunResult r = s.kbuild({"--no-torch", "--config", file, "--device", "acc", "--dry-run", s.kernel,
                          "-o", s.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("warning: " + file + ":4: cflags entry \"-funroll-loops\" starts with '-'") !=
        std::string::npos);
  CHECK(r.err.find("write \"funroll-loops\"") != std::string::npos);
  CHECK(count(r.err, "starts with '-'") == 1);  // the entry without a dash is fine
}

TEST_CASE(
    "a device file's libraries entry written with -l, and extend on a device not built in, "
    "are warned about at load, with file:line",
    "[e2e][first-hour]") {
  Scratch s;
  std::string file = s.dir / "acc.json";
  write_file(file,
             "{\n  \"device\": \"acc\",\n  \"mode\": \"extend\",\n"
             "  \"libraries\": [\"m\", \"-lfoo\"]\n}\n");
  RunResult r = s.kbuild({"--no-torch", "--config", file, "--device", "acc", "--dry-run", s.kernel,
                          "-o", s.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("warning: " + file + ":4: libraries entry \"-lfoo\" starts with -l") !=
        std::string::npos);
  CHECK(r.err.find("the compiler gets \"-l-lfoo\"; write \"foo\"") != std::string::npos);
  CHECK(count(r.err, "starts with -l") == 1);  // "m" is fine
  CHECK(r.err.find("warning: " + file + ":3: \"mode\": \"extend\" on device 'acc', which is " +
                   "not built in") != std::string::npos);
  // Extending cuda, a built-in device, is what extend is for: no warning.
  write_file(file, R"({"device": "cuda", "mode": "extend", "libraries": ["cublasLt"]})");
  RunResult cuda = s.kbuild({"--no-torch", "--config", file, "--device", "cpu", "--dry-run",
                             s.kernel, "-o", s.dir / "k.so"});
  CHECK(cuda.err.find("extend") == std::string::npos);
}

TEST_CASE(
    "a device file's relative include and library dirs are relative to the file, not to "
    "where kbuild runs",
    "[e2e][first-hour]") {
  Scratch s;
  fs::create_directories(s.dir / "sdk/include");
  write_file(s.dir / "sdk/include/acc.h", "inline int acc_answer() { return 42; }\n");
  write_file(s.dir / "sdk/acc.json",
             R"({"device": "acc", "include_dirs": ["include"], "libraries_dirs": ["lib"]})");
  write_file(s.dir / "uses_sdk.cpp",
             "#include <acc.h>\nextern \"C\" int f() { return acc_answer(); }\n");
  // Run in s.dir, the file in s.dir/sdk: "include" is s.dir/sdk/include.
  RunResult r = s.here({"--no-torch", "--config", "sdk/acc.json", "--device", "acc", "-v",
                        "uses_sdk.cpp", "-o", "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(s.dir / "k.so"));
  RunResult dry = s.here({"--no-torch", "--config", "sdk/acc.json", "--device", "acc", "--dry-run",
                          "uses_sdk.cpp", "-o", "k.so"});
  CHECK(dry.out.find("-I" + (s.dir / "sdk/include")) != std::string::npos);
  CHECK(dry.out.find("-L" + (s.dir / "sdk/lib")) != std::string::npos);
}

TEST_CASE("--compile-commands: one entry per absolute source and output, however spelled",
          "[e2e][first-hour]") {
  Scratch s;
  std::string db = s.dir / "compile_commands.json";
  for (const std::vector<std::string>& spelling :
       {std::vector<std::string>{"kernel.cpp", "-o", "k.so"},
        {"./kernel.cpp", "-o", "./k.so"},
        {s.kernel, "-o", s.dir / "k.so"},
        {"../" + s.dir.path().filename().string() + "/kernel.cpp", "-o", "sub/../k.so"}}) {
    fs::create_directories(s.dir / "sub");
    std::vector<std::string> args{"--no-torch", "--dry-run", "--compile-commands",
                                  "compile_commands.json"};
    args.insert(args.end(), spelling.begin(), spelling.end());
    RunResult r = s.here(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  json entries = json::parse(read_file(db));
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["file"] == s.kernel);
  CHECK(entries[0]["output"] == s.dir / "k.so");
}

TEST_CASE("--compile-commands: a dry run records exactly what the build records",
          "[e2e][first-hour]") {
  Scratch s;
  RunResult dry = s.here({"--no-torch", "--dry-run", "--compile-commands", "dry.json", "kernel.cpp",
                          "-o", "softmax.so"});
  REQUIRE(dry.exit_code == 0);
  RunResult built =
      s.here({"--no-torch", "--compile-commands", "built.json", "kernel.cpp", "-o", "softmax.so"});
  INFO(built.err);
  REQUIRE(built.exit_code == 0);
  CHECK(json::parse(read_file(s.dir / "dry.json")) == json::parse(read_file(s.dir / "built.json")));
  // And both into one database: still one entry.
  REQUIRE(s.here({"--no-torch", "--compile-commands", "dry.json", "kernel.cpp", "-o", "softmax.so"})
              .exit_code == 0);
  CHECK(json::parse(read_file(s.dir / "dry.json")).size() == 1);
}

TEST_CASE("a failed build with no earlier output does not say it was left as it was",
          "[e2e][first-hour]") {
  Scratch s;
  write_file(s.dir / "bad.cpp", "int f( {\n");
  RunResult r = s.here({"--no-torch", "bad.cpp", "-o", "bad.so"});
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("bad.so left as it was") == std::string::npos);
  CHECK(r.err.find("no bad.so written") != std::string::npos);
  write_file(s.dir / "bad.so", "earlier");
  r = s.here({"--no-torch", "bad.cpp", "-o", "bad.so"});
  CHECK(r.err.find("bad.so left as it was") != std::string::npos);
  // A time-out and a failed load check say the same.
  write_file(s.dir / "slow-g++", "#!/bin/sh\nexec sleep 30\n", true);
  r = s.here({"--no-torch", "--cxx", s.dir / "slow-g++", "--timeout", "0.3", "kernel.cpp", "-o",
              "slow.so"});
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("slow.so left as it was") == std::string::npos);
  CHECK(r.err.find("no slow.so written") != std::string::npos);
  write_file(s.dir / "needs.cpp", "extern \"C\" int g();\nextern \"C\" int f() { return g(); }\n");
  r = s.here({"--no-torch", "--check-load", "needs.cpp", "-o", "needs.so"});
  CHECK(r.exit_code == 7);
  CHECK(r.err.find("needs.so left as it was") == std::string::npos);
  CHECK(r.err.find("no needs.so written") != std::string::npos);
}

TEST_CASE("a mistyped option gets a 'did you mean'", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.kbuild({"--devce", "npu", s.kernel});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("did you mean --device?") != std::string::npos);
  r = s.kbuild({"doctor", "--jsn"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("did you mean --json?") != std::string::npos);
}

TEST_CASE("a subcommand after an option: 'subcommands come first'", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.here({"--config", "x.json", "devices"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("'devices' is a subcommand, and subcommands come first") != std::string::npos);
  CHECK(r.err.find("No such file") == std::string::npos);
  r = s.here({"-q", "explain", "kernel.cpp"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("subcommands come first: kbuild explain") != std::string::npos);
  r = s.here({"devcies"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("did you mean the subcommand 'devices'?") != std::string::npos);
}

TEST_CASE("an unknown device close to a registered one: a warning, an error with --strict",
          "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.kbuild({"--no-torch", "--device", "npuu", "--dry-run", s.kernel});
  CHECK(r.exit_code == 0);  // upstream: an unknown device has empty options
  CHECK(r.err.find("warning: unknown device 'npuu'; did you mean 'npu'?") != std::string::npos);
  CHECK(count(r.err, "unknown device 'npuu'") == 1);  // the warning, not also a note
  r = s.kbuild({"--no-torch", "--device", "npuu", "--strict", "--dry-run", s.kernel});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("error[usage]: unknown device 'npuu'; did you mean 'npu'?") !=
        std::string::npos);
  r = s.kbuild({"--no-torch", "--device", "tpu", "--dry-run", s.kernel});
  CHECK(r.err.find("did you mean") == std::string::npos);  // nothing close: upstream's note
}

TEST_CASE("each subcommand's --help lists its own options only; usage puts subcommands first",
          "[e2e][first-hour]") {
  Scratch s;
  RunResult devices = s.kbuild({"devices", "--help"});
  CHECK(devices.exit_code == 0);
  CHECK(devices.out.find("--json") != std::string::npos);
  for (const char* build_only : {"--dry-run", "--aot", "--isa", "--pch", "--cxx"}) {
    INFO(build_only);
    CHECK(devices.out.find(build_only) == std::string::npos);
  }
  RunResult doctor = s.kbuild({"doctor", "--help"});
  CHECK(doctor.out.find("--device") != std::string::npos);
  for (const char* build_only : {"--dry-run", "--pch", "--timeout", "--launcher"}) {
    INFO(build_only);
    CHECK(doctor.out.find(build_only) == std::string::npos);
  }
  RunResult top = s.kbuild({"--help"});
  CHECK(top.out.find("kbuild SUBCOMMAND [OPTIONS]") != std::string::npos);
  CHECK(top.out.find("[sources...] [SUBCOMMAND]") == std::string::npos);
}

TEST_CASE("kbuild cache alone names its actions", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.kbuild({"cache"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("kbuild cache stats") != std::string::npos);
  CHECK(r.err.find("kbuild cache clear") != std::string::npos);
}

TEST_CASE("entries left out for one reason are one note; -v lists each", "[e2e][first-hour]") {
  Scratch s;
  std::string file = s.dir / "acc.json";
  write_file(file,
             "{\"device\": \"acc\", \"include_dirs\": [\"${torch_npu_root}/a\", "
             "\"${torch_npu_root}/b\", \"${torch_npu_root}/c\"]}\n");
  std::vector<std::string> args{"--no-torch", "--config",  file,    "--device",
                                "acc",        "--dry-run", s.kernel};
  RunResult r = s.kbuild(args);
  REQUIRE(r.exit_code == 0);
  CHECK(count(r.err, "note:") == 1);
  CHECK(r.err.find("left out 3 entries: torch_npu_root is unknown") != std::string::npos);
  CHECK(r.err.find("-v lists them") != std::string::npos);
  args.push_back("-v");
  RunResult verbose = s.kbuild(args);
  CHECK(count(verbose.err, "left out include_dirs entry") == 3);
}

TEST_CASE("--device npu without torch: one note for every entry it left out", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.kbuild({"--device", "npu", "--no-torch", "--dry-run", s.kernel},
                         {{"ASCEND_HOME_PATH", s.dir.str()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // One note for the left-out entries (the other says which torch_npu release is reproduced).
  CHECK(count(r.err, "left out") == 1);
  CHECK(count(r.err, "note:") <= 2);
  CHECK(r.err.find("device 'npu': left out ") != std::string::npos);
}

TEST_CASE("-v on a cache hit says it was a hit, and names no command", "[e2e][first-hour]") {
  Scratch s;
  REQUIRE(s.here({"--no-torch", "-v", "kernel.cpp", "-o", "k.so"}).exit_code == 0);
  RunResult hit = s.here({"--no-torch", "-v", "kernel.cpp", "-o", "k.so"});
  INFO(hit.err);
  REQUIRE(hit.exit_code == 0);
  CHECK(hit.err.find("cache: hit") != std::string::npos);
  CHECK(hit.err.find("running:") == std::string::npos);
  CHECK(hit.err.find("ran:") == std::string::npos);
  CHECK(hit.err.find("no compiler ran") != std::string::npos);
}

TEST_CASE("cache stats shows sizes for people, and the limit", "[e2e][first-hour]") {
  Scratch s;
  REQUIRE(s.here({"--no-torch", "kernel.cpp", "-o", "k.so"}).exit_code == 0);
  RunResult stats = s.kbuild({"cache", "stats"}, {{"KBUILD_CACHE_MAX_SIZE", "500M"}});
  INFO(stats.out);
  REQUIRE(stats.exit_code == 0);
  CHECK(std::regex_search(stats.out, std::regex(R"(size +[0-9.]+ (B|KiB|MiB) of 500\.0 MiB)")));
}

TEST_CASE("devices has a header and says what each device is", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.kbuild({"devices"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(!lines.empty());
  CHECK(lines[0] == "device\tkind\tdescription\tsource");
  CHECK(r.out.find("cpu\tbuilt-in\tthe host CPU") != std::string::npos);
  CHECK(r.out.find("Ascend NPU") != std::string::npos);  // npu.json's description
  RunResult listed = s.kbuild({"devices", "--json"});
  REQUIRE(listed.exit_code == 0);
  CHECK(json::parse(listed.out)[0]["description"] == "the host CPU (Inductor's default device)");
}

TEST_CASE("doctor ends with a summary line", "[e2e][first-hour]") {
  Scratch s;
  RunResult r = s.kbuild({"doctor", "--no-torch"});
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(!lines.empty());
  CHECK(std::regex_match(lines.back(),
                         std::regex(R"(summary: [0-9]+ checks: [0-9]+ ok, [0-9]+ warnings, )"
                                    R"([0-9]+ failures; .*)")));
}

TEST_CASE("--report: the notes said, torch as found, the backend resolved", "[e2e][first-hour]") {
  Scratch s;
  // No torch here (python3 finds none), so its flags are left out, with notes.
  RunResult r = s.here({"--device", "npu", "--dry-run", "kernel.cpp", "--report", "r.json"},
                       {{"ASCEND_HOME_PATH", s.dir.str()}});
  INFO(r.err);
  json report = json::parse(read_file(s.dir / "r.json"));
  bool noted = r.err.find("note:") != std::string::npos;
  CHECK(noted);
  CHECK(report["notes"].size() >= 1);
  CHECK(report["request"]["torch"] == false);
  CHECK(report["request"]["backend"] == "triton");
}

TEST_CASE("build-many names the failed stage on its error output", "[e2e][first-hour]") {
  Scratch s;
  write_file(s.dir / "bad.cpp", "int f( {\n");
  write_file(s.dir / "m.json",
             "{\"common\": [\"--no-torch\"], \"builds\": [[\"bad.cpp\", \"-o\", \"bad.so\"]]}");
  RunResult r = s.here({"build-many", "m.json"});
  CHECK(r.exit_code == 13);
  CHECK(r.err.find("(compile, exit 5)") != std::string::npos);
}

TEST_CASE("a device file named after a built-in device must say whether it replaces or extends it",
          "[e2e][first-hour]") {
  Scratch s;
  const std::string file = s.dir / "cuda.json";
  write_file(file, "{\n  \"device\": \"cuda\",\n  \"libraries\": [\"foo\"]\n}\n");
  const std::vector<std::string> build{"--no-torch", "--device-file", file, "--device",    "cuda",
                                       "--dry-run",  s.kernel,        "-o", s.dir / "k.so"};
  RunResult r = s.kbuild(build);
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK(r.err.find("error[config]: " + file + ":2:") != std::string::npos);
  CHECK(r.err.find("'cuda' is a built-in device") != std::string::npos);
  RunResult devices = s.kbuild({"devices", "--device-file", file});
  CHECK(devices.exit_code == 3);
  RunResult doctor = s.kbuild({"doctor", "--no-torch", "--device-file", file});
  CHECK(doctor.exit_code == 12);
  CHECK(doctor.out.find("'cuda' is a built-in device") != std::string::npos);
  // Said, it loads, and doctor says what it does to the built-in device.
  write_file(file, R"({"device": "cuda", "mode": "replace", "libraries": ["foo"]})");
  RunResult replaced = s.kbuild(build);
  INFO(replaced.err);
  CHECK(replaced.exit_code == 0);
  CHECK(replaced.out.find("-lfoo") != std::string::npos);
  CHECK(replaced.out.find("USE_CUDA") == std::string::npos);
  doctor = s.kbuild({"doctor", "--no-torch", "--device-file", file});
  CHECK(doctor.out.find(file + " (device cuda, replaces the built-in cuda)") != std::string::npos);
  write_file(file, R"({"device": "cuda", "mode": "extend", "libraries": ["foo"]})");
  doctor = s.kbuild({"doctor", "--no-torch", "--device-file", file});
  CHECK(doctor.out.find(file + " (device cuda, extends the built-in cuda)") != std::string::npos);
}

TEST_CASE("a header missing because of a device file's include dir names the device file",
          "[e2e][first-hour]") {
  Scratch s;
  fs::create_directories(s.dir / "sdk/include");
  write_file(s.dir / "sdk/include/acc.h", "inline int acc_answer() { return 42; }\n");
  const std::string file = s.dir / "sdk/acc.json";
  write_file(file, "{\n  \"device\": \"acc\",\n  \"include_dirs\": [\"includ\"]\n}\n");
  write_file(s.dir / "uses_sdk.cpp",
             "#include <acc.h>\nextern \"C\" int f() { return acc_answer(); }\n");
  RunResult r = s.kbuild({"--no-torch", "--device-file", file, "--device", "acc",
                          s.dir / "uses_sdk.cpp", "-o", s.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("acc.h is in none of the include dirs that device files added: " +
                   (s.dir / "sdk/includ") + " (does not exist; config acc, " + file + ":3)") !=
        std::string::npos);
  CHECK(r.err.find("fix include_dirs in " + file) != std::string::npos);
  // The header in place: the same device file builds.
  write_file(file, R"({"device": "acc", "include_dirs": ["include"]})");
  CHECK(s.kbuild({"--no-torch", "--device-file", file, "--device", "acc", s.dir / "uses_sdk.cpp",
                  "-o", s.dir / "k.so"})
            .exit_code == 0);
}

TEST_CASE("an undefined symbol at load says which libraries and dirs were searched, and what to do",
          "[e2e][first-hour]") {
  Scratch s;
  fs::create_directories(s.dir / "sdk/lib");
  const std::string file = s.dir / "sdk/acc.json";
  write_file(file, R"({"device": "acc", "libraries": ["m"], "libraries_dirs": ["lib"],
  "ldflags": ["Wl,-rpath,/opt/acc/lib"]})");
  write_file(s.dir / "calls.cpp",
             "void acc_launch(int);\nextern \"C\" int f() { acc_launch(1); return 1; }\n");
  RunResult r = s.kbuild({"--no-torch", "--device-file", file, "--device", "acc", "--check-load",
                          s.dir / "calls.cpp", "-o", s.dir / "k.so"});
  INFO(r.err);
  CHECK(r.exit_code == 7);
  CHECK(r.err.find("undefined symbol: _Z10acc_launchi") != std::string::npos);
  CHECK(r.err.find("acc_launch(int) is defined by none of the libraries the link named (-lm, "
                   "added by config acc, " +
                   file + ":1)") != std::string::npos);
  CHECK(r.err.find("searched -L " + (s.dir / "sdk/lib") + ", RUNPATH /opt/acc/lib") !=
        std::string::npos);
  CHECK(r.err.find("add the library that defines it to the device file's \"libraries\"") !=
        std::string::npos);
  CHECK(r.err.find("nm -D --defined-only") != std::string::npos);
}
