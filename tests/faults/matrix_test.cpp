// The bad-input matrix of docs/errors.md, one test per row. Each row runs
// kbuild where an earlier output already exists and checks the exit code
// (against this test and against the table in docs/errors.md), exactly one
// error line naming what and where, the earlier output byte for byte, and
// that no temporary file is left behind.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

const std::string kEarlierOutput = "the bytes of an earlier, good build\n";

// Row id -> exit code, read from the tables of docs/errors.md.
const std::map<std::string, int>& documented_exit_codes() {
  static const std::map<std::string, int> codes = [] {
    std::map<std::string, int> out;
    std::ifstream doc(source_root() + "/docs/errors.md");
    std::regex row(R"(^\| (E[0-9]+) \|[^|]*\| ([0-9]+) \|)");
    std::smatch m;
    for (std::string line; std::getline(doc, line);)
      if (std::regex_search(line, m, row)) out[m[1]] = std::stoi(m[2]);
    return out;
  }();
  return codes;
}

std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("kbuild: error[", 0) == 0) out.push_back(line);
  return out;
}

struct Row {
  TempDir home, dir;
  std::string kernel = dir / "kernel.cpp";
  std::string output = dir / "k.so";

  Row() {
    write_file(kernel, "extern \"C\" int f() { return 1; }\n");
    write_file(output, kEarlierOutput);
  }
  // kbuild ARGS (no torch) kernel.cpp -o k.so
  RunResult build(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "--no-torch");
    args.insert(args.end(), {kernel, "-o", output});
    return run_kbuild(args, home.str(), std::move(env));
  }
  RunResult kbuild(const std::vector<std::string>& args,
                   std::map<std::string, std::string> env = {}) {
    return run_kbuild(args, home.str(), std::move(env));
  }
  // A device file in this row's directory.
  std::string device_file(const std::string& name, const std::string& text) {
    write_file(dir / name, text);
    return dir / name;
  }
  // An exec provider running `script` (a shell script body).
  std::vector<std::string> exec_device(const std::string& script, int timeout_s = 30) {
    write_file(dir / "provider.sh", "#!/bin/sh\n" + script, true);
    std::string file =
        device_file("ext.json",
                    "{\"device\": \"ext\", \"exec\": {\"command\": [\"./provider.sh\"], "
                    "\"timeout_s\": " +
                        std::to_string(timeout_s) + "}}");
    return {"--config", file, "--device", "ext"};
  }

  void expect(const std::string& id, const RunResult& r, int code, const std::string& stage,
              const std::vector<std::string>& mentions) const {
    INFO(id << " stderr: " << r.err);
    auto documented = documented_exit_codes().find(id);
    REQUIRE(documented != documented_exit_codes().end());
    CHECK(documented->second == code);
    CHECK(r.exit_code == code);
    std::vector<std::string> lines = error_lines(r.err);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].rfind("kbuild: error[" + stage + "]: ", 0) == 0);
    for (const std::string& m : mentions) CHECK(lines[0].find(m) != std::string::npos);
    CHECK(read_file(output) == kEarlierOutput);
    for (const auto& entry : fs::recursive_directory_iterator(dir.path())) {
      std::string name = entry.path().filename().string();
      CHECK(name.find("kbuild-tmp") == std::string::npos);
      CHECK(name.find(".tmp.") == std::string::npos);
    }
  }
};

}  // namespace

// Command line.

TEST_CASE("E01 unknown option", "[matrix]") {
  Row row;
  row.expect("E01", row.build({"--frobnicate"}), 2, "usage", {"--frobnicate"});
}

TEST_CASE("E02 empty device name", "[matrix]") {
  Row row;
  row.expect("E02", row.build({"--device", ""}), 2, "usage", {"--device", "not a device name"});
}

TEST_CASE("E03 device name with a slash and dots", "[matrix]") {
  Row row;
  row.expect("E03", row.build({"--device", "../x"}), 2, "usage",
             {"--device", "'../x' is not a device name"});
}

TEST_CASE("E04 unknown device with --strict", "[matrix]") {
  Row row;
  row.expect("E04", row.build({"--device", "tpu", "--strict"}), 2, "usage",
             {"unknown device 'tpu' (--strict)", "known devices: cpu"});
}

TEST_CASE("E150 a subcommand after an option", "[matrix]") {
  Row row;
  row.expect("E150", row.kbuild({"--config", row.dir / "x.json", "devices"}), 2, "usage",
             {"'devices' is a subcommand", "subcommands come first: kbuild devices"});
}

TEST_CASE("E151 an unknown option one typo from a known one", "[matrix]") {
  Row row;
  row.expect("E151", row.build({"--devce", "cpu"}), 2, "usage",
             {"--devce", "did you mean --device?"});
}

TEST_CASE("E152 an unknown device one typo from a registered one, with --strict", "[matrix]") {
  Row row;
  row.expect("E152", row.build({"--device", "npuu", "--strict"}), 2, "usage",
             {"unknown device 'npuu'", "did you mean 'npu'?"});
}

TEST_CASE("E153 kbuild cache without an action", "[matrix]") {
  Row row;
  row.expect("E153", row.kbuild({"cache"}), 2, "usage",
             {"kbuild cache stats", "kbuild cache clear"});
}

TEST_CASE("E154 kbuild cache with an action one typo from a known one", "[matrix]") {
  Row row;
  row.expect(
      "E154", row.kbuild({"cache", "stat"}), 2, "usage",
      {"unknown cache action 'stat'; did you mean 'kbuild cache stats'?", "stats, clear, keygen"});
  row.expect("E154", row.kbuild({"cache", "--cache-max-size", "1G", "frobnicate"}), 2, "usage",
             {"unknown cache action 'frobnicate' (actions: stats, clear, keygen, check)"});
}

TEST_CASE("E05 unknown backend", "[matrix]") {
  Row row;
  row.expect(
      "E05",
      row.build({"--device", "npu", "--backend", "nope"}, {{"ASCEND_HOME_PATH", row.dir.str()}}), 2,
      "usage", {"no backend 'nope'", "triton", "npu.json"});
}

TEST_CASE("E06 unknown --isa", "[matrix]") {
  Row row;
  row.expect("E06", row.build({"--isa", "avx9"}), 2, "usage", {"unknown --isa 'avx9'"});
}

TEST_CASE("E07 --timeout that is not a positive number of seconds", "[matrix]") {
  Row row;
  row.expect("E07", row.build({"--timeout", "-1"}), 2, "usage", {"--timeout", "'-1'"});
  row.expect("E07", row.build({"--timeout", "soon"}), 2, "usage", {"--timeout", "'soon'"});
}

TEST_CASE("E08 empty output name", "[matrix]") {
  Row row;
  row.expect("E08", row.kbuild({"--no-torch", row.kernel, "-o", ""}), 2, "usage",
             {"--output", "must not be empty"});
}

TEST_CASE("E09 modes that exclude each other", "[matrix]") {
  Row row;
  row.expect("E09", row.build({"-c", "--preprocess"}), 2, "usage", {"exclude each other"});
}

TEST_CASE("E10 cache size that is not a size", "[matrix]") {
  Row row;
  row.expect("E10", row.build({"--cache-max-size", "12Q"}), 2, "usage", {"'12Q'", "500M"});
}

TEST_CASE("E11 torch root that is not a directory", "[matrix]") {
  Row row;
  std::string absent = row.dir / "absent";
  row.expect("E11", row.kbuild({"--torch-root", absent, row.kernel, "-o", row.output}), 2, "usage",
             {"--torch-root " + absent, "not a directory", "--no-torch"});
  row.expect("E11", row.kbuild({row.kernel, "-o", row.output}, {{"KBUILD_TORCH_ROOT", absent}}), 2,
             "usage", {"KBUILD_TORCH_ROOT " + absent});
}

TEST_CASE("E12 no source", "[matrix]") {
  Row row;
  row.expect("E12", row.kbuild({"--no-torch", "-o", row.output}), 2, "usage", {"no source given"});
}

TEST_CASE("E16 output equal to a source", "[matrix]") {
  Row row;
  std::string source = read_file(row.kernel);
  row.expect("E16", row.kbuild({"--no-torch", row.kernel, "-o", row.kernel}), 2, "usage",
             {"is also a source"});
  // A dry run refuses what the build refuses, with the same code and words.
  row.expect("E16", row.kbuild({"--no-torch", "--dry-run", row.kernel, "-o", row.kernel}), 2,
             "usage", {"is also a source"});
  CHECK(read_file(row.kernel) == source);
}

// Sources and outputs.

TEST_CASE("E13 missing source", "[matrix]") {
  Row row;
  row.expect("E13", row.kbuild({"--no-torch", row.dir / "nope.cpp", "-o", row.output}), 8, "usage",
             {row.dir / "nope.cpp", "No such file"});
  RunResult dry = row.kbuild({"--no-torch", "--dry-run", row.dir / "nope.cpp", "-o", row.output});
  row.expect("E13", dry, 8, "usage", {row.dir / "nope.cpp", "No such file"});
  CHECK(dry.out.empty());  // no plan printed for a build that cannot run
}

TEST_CASE("E14 a directory as the source", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "adir");
  row.expect("E14", row.kbuild({"--no-torch", row.dir / "adir", "-o", row.output}), 8, "usage",
             {row.dir / "adir", "not a regular file"});
}

TEST_CASE("E15 a missing source named with a newline and a non-UTF-8 byte", "[matrix]") {
  Row row;
  RunResult r = row.kbuild({"--no-torch", row.dir / "we\nird\xff.cpp", "-o", row.output});
  row.expect("E15", r, 8, "usage", {row.dir / "we\\nird\\xff.cpp", "No such file"});
}

TEST_CASE("E17 output directory missing", "[matrix]") {
  Row row;
  row.expect("E17", row.kbuild({"--no-torch", row.kernel, "-o", row.dir / "missing/k.so"}), 9,
             "usage", {row.dir / "missing", "does not exist"});
  row.expect("E17",
             row.kbuild({"--no-torch", "--dry-run", row.kernel, "-o", row.dir / "missing/k.so"}), 9,
             "usage", {row.dir / "missing", "does not exist"});
}

TEST_CASE("E18 output directory is a file", "[matrix]") {
  Row row;
  row.expect("E18", row.kbuild({"--no-torch", row.kernel, "-o", row.kernel + "/k.so"}), 9, "usage",
             {row.kernel, "not a directory"});
}

TEST_CASE("E19 output directory not writable", "[matrix]") {
  Row row;
  // Root may write anywhere a mode allows; nobody may create files in /proc.
  std::string target = "/proc/kbuild-matrix.so";
  if (geteuid() != 0) {
    fs::create_directories(row.dir / "ro");
    fs::permissions(row.dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    target = row.dir / "ro/k.so";
  }
  row.expect("E19", row.kbuild({"--no-torch", row.kernel, "-o", target}), 9, "usage",
             {"cannot write beside " + target, "writable output directory"});
  fs::permissions(row.dir.path(), fs::perms::owner_all, fs::perm_options::add);
}

TEST_CASE("E20 output is a directory", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "out.d");
  row.expect("E20", row.kbuild({"--no-torch", row.kernel, "-o", row.dir / "out.d"}), 9, "usage",
             {row.dir / "out.d", "is a directory"});
}

TEST_CASE("E46 --compile-commands file that is a directory", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "cc.json");
  row.expect("E46", row.build({"--compile-commands", row.dir / "cc.json"}), 9, "usage",
             {"--compile-commands", row.dir / "cc.json"});
}

// Device files and configuration.

TEST_CASE("E21 malformed JSON", "[matrix]") {
  Row row;
  auto file = row.device_file("bad.json", "{\n  \"device\": \"x\"\n  \"libraries\": []\n}");
  row.expect("E21", row.build({"--config", file}), 3, "config", {file + ":3:", "malformed JSON"});
}

TEST_CASE("E22 wrong type", "[matrix]") {
  Row row;
  auto file = row.device_file("type.json", "{\"device\": \"x\", \"cflags\": [true]}");
  row.expect("E22", row.build({"--config", file}), 3, "config",
             {file + ":1:", "at /cflags/0: expected a string"});
}

TEST_CASE("E23 unknown key", "[matrix]") {
  Row row;
  auto file = row.device_file("typo.json", "{\"device\": \"x\", \"librarys\": []}");
  row.expect("E23", row.build({"--config", file}), 3, "config",
             {file + ":1:", "unknown key 'librarys'; did you mean 'libraries'?"});
}

TEST_CASE("E47 a trailing comma in a device file", "[matrix]") {
  Row row;
  // The parser stops at the '}' on line 4; the comma is on line 3.
  auto file = row.device_file("comma.json", "{\n  \"device\": \"x\",\n  \"libraries\": [],\n}\n");
  row.expect("E47", row.build({"--config", file}), 3, "config",
             {file + ":3:18: malformed JSON: trailing comma", "remove it"});
}

TEST_CASE("E48 a comment in a device file", "[matrix]") {
  Row row;
  auto file = row.device_file(
      "comment.json", "{\n  \"device\": \"x\",\n  // the accelerator\n  \"libraries\": []\n}\n");
  row.expect("E48", row.build({"--config", file}), 3, "config",
             {file + ":3:3: malformed JSON: comments are not JSON", "remove the comment"});
}

TEST_CASE("E24 duplicate key", "[matrix]") {
  Row row;
  auto file = row.device_file("dup.json", "{\"device\": \"x\", \"device\": \"y\"}");
  row.expect("E24", row.build({"--config", file}), 3, "config",
             {file + ":1:", "duplicate key '/device'"});
}

TEST_CASE("E25 empty device name in a device file", "[matrix]") {
  Row row;
  auto file = row.device_file("empty.json", "{\"device\": \"\"}");
  row.expect("E25", row.build({"--config", file}), 3, "config",
             {file + ":1:", "at /device: invalid device name ''"});
}

TEST_CASE("E26 device name with a slash and dots in a device file", "[matrix]") {
  Row row;
  auto file = row.device_file("dots.json", "{\"device\": \"../x\"}");
  row.expect("E26", row.build({"--config", file}), 3, "config",
             {file + ":1:", "invalid device name '../x'"});
}

TEST_CASE("E27 extends cycle", "[matrix]") {
  Row row;
  auto file = row.device_file(
      "cycle.json",
      "{\"device\": \"x\", \"layers\": {\"a\": {\"extends\": [\"b\"]}, \"b\": {\"extends\": "
      "[\"a\"]}}}");
  row.expect("E27", row.build({"--config", file}), 3, "config",
             {file + ":1:", "in a cycle: a -> b -> a"});
}

TEST_CASE("E28 huge device file", "[matrix]") {
  Row row;
  auto file = row.device_file(
      "huge.json", "{\"device\": \"x\", \"description\": \"" + std::string(2 << 20, 'x') + "\"}");
  row.expect("E28", row.build({"--config", file}), 3, "config", {file, "larger than 1 MiB"});
}

TEST_CASE("E29 config directory that is a symlink loop", "[matrix]") {
  Row row;
  fs::create_directory_symlink("loop", row.dir / "loop");
  row.expect("E29", row.build({}, {{"KBUILD_CONFIG_PATH", row.dir / "loop"}}), 3, "config",
             {row.dir / "loop", "Too many levels of symbolic links"});
}

TEST_CASE("E30 unreadable device file", "[matrix]") {
  Row row;
  // Root reads any mode; /proc/self/mem fails every read at offset 0.
  std::string file = "/proc/self/mem";
  if (geteuid() != 0) {
    file = row.device_file("secret.json", "{\"device\": \"x\"}");
    fs::permissions(file, fs::perms::none);
  }
  row.expect("E30", row.build({"--config", file}), 3, "config",
             {"cannot read device file " + file});
}

TEST_CASE("E31 --config file missing", "[matrix]") {
  Row row;
  row.expect("E31", row.build({"--config", row.dir / "absent.json"}), 3, "config",
             {row.dir / "absent.json", "no such file"});
}

TEST_CASE("E351 --device-file naming a directory says what to do", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "devs");
  row.expect("E351", row.build({"--device-file", row.dir / "devs"}), 3, "config",
             {row.dir / "devs", "takes one file: name a .json file in it", "KBUILD_CONFIG_PATH"});
}

TEST_CASE("E380 a device file for a built-in device that does not say replace or extend",
          "[matrix]") {
  Row row;
  auto file = row.device_file("cuda.json", "{\n  \"device\": \"cuda\",\n  \"libraries\": [\"x\"]}");
  row.expect("E380", row.build({"--device-file", file, "--device", "cuda"}), 3, "config",
             {file + ":2:", "at /device", "'cuda' is a built-in device", "\"mode\": \"extend\"",
              "\"mode\": \"replace\""});
}

TEST_CASE("E32 world-writable device file; --allow-untrusted-device-files overrides", "[matrix]") {
  Row row;
  auto file = row.device_file("open.json", "{\"device\": \"x\", \"definitions\": [\"OPEN\"]}");
  fs::permissions(file, fs::perms::others_write, fs::perm_options::add);
  row.expect("E32", row.build({"--config", file}), 3, "config",
             {file, "world-writable", "chmod o-w " + file,
              "or pass --allow-untrusted-device-files if you trust it"});
  // The older spellings stay accepted.
  for (const char* allow : {"--allow-untrusted-device-files", "--allow-untrusted-config"}) {
    RunResult allowed = row.kbuild(
        {"--no-torch", "--device-file", file, allow, "--device", "x", "--dry-run", row.kernel});
    INFO(allow << ": " << allowed.err);
    CHECK(allowed.exit_code == 0);
    CHECK(allowed.out.find(" -D OPEN ") != std::string::npos);  // as Inductor renders it
  }
  // doctor reports it as a failed check.
  RunResult doctor = row.kbuild({"doctor", "--no-torch", "--config", file});
  CHECK(doctor.exit_code == 12);
  CHECK(doctor.out.find("world-writable") != std::string::npos);
}

TEST_CASE("E33 device file owned by another user", "[matrix]") {
  if (geteuid() != 0) {
    WARN("E33 needs root to give a file to another user; not run");
    return;
  }
  Row row;
  auto file = row.device_file("theirs.json", "{\"device\": \"x\"}");
  REQUIRE(chown(file.c_str(), 65534, 65534) == 0);
  row.expect("E33", row.build({"--config", file}), 3, "config",
             {file, "owned by uid 65534", "--allow-untrusted-device-files"});
}

TEST_CASE("E34 device file in a world-writable directory", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "shared");
  fs::permissions(row.dir / "shared", fs::perms::all | fs::perms::sticky_bit);
  write_file(row.dir / "shared/dev.json", "{\"device\": \"x\"}");
  row.expect("E34", row.build({"--config", row.dir / "shared/dev.json"}), 3, "config",
             {row.dir / "shared/dev.json", "world-writable (mode 1777)", "move it"});
  // The same for a directory of device files.
  row.expect("E34", row.build({}, {{"KBUILD_CONFIG_PATH", row.dir / "shared"}}), 3, "config",
             {"config directory " + row.dir / "shared", "world-writable"});
}

TEST_CASE("E41 exec provider program world-writable", "[matrix]") {
  Row row;
  auto args = row.exec_device("echo '{}'\n");
  fs::permissions(row.dir / "provider.sh", fs::perms::others_write, fs::perm_options::add);
  row.expect("E41", row.build(args), 3, "config",
             {"exec provider", row.dir / "provider.sh", "world-writable"});
}

// Inductor profiles.

namespace {

// A data dir whose profiles/ holds `files` (name -> text); the build reads it.
std::map<std::string, std::string> profile_dir(Row& row,
                                               const std::map<std::string, std::string>& files) {
  fs::create_directories(row.dir / "data/profiles");
  for (const auto& [name, text] : files) write_file(row.dir / ("data/profiles/" + name), text);
  return {{"KBUILD_DATA_DIR", row.dir / "data"}};
}

}  // namespace

TEST_CASE("E200 --torch-version that is not a version", "[matrix]") {
  Row row;
  row.expect("E200", row.build({"--torch-version", "2.x"}), 2, "usage",
             {"--torch-version: '2.x' is not a torch version"});
}

TEST_CASE("E201 unknown key in a profile", "[matrix]") {
  Row row;
  auto env = profile_dir(row, {{"2.11.json", "{\"profile\": \"2.11\", \"bsae\": {}}"}});
  row.expect("E201", row.build({}, env), 3, "config",
             {row.dir / "data/profiles/2.11.json:1:", "at /bsae: unknown key 'bsae'", "base"});
}

TEST_CASE("E202 wrong type in a profile list", "[matrix]") {
  Row row;
  auto env =
      profile_dir(row, {{"2.11.json", "{\"profile\": \"2.11\", \"base\": {\"cflags\": [3]}}"}});
  row.expect("E202", row.build({}, env), 3, "config",
             {row.dir / "data/profiles/2.11.json:1:", "at /base/cflags/0: expected a string"});
}

TEST_CASE("E203 unknown condition in a profile", "[matrix]") {
  Row row;
  auto env = profile_dir(row, {{"2.11.json",
                                "{\"profile\": \"2.11\", \"base\": {\"cflags\": [{\"flag\": "
                                "\"O3\", \"when\": \"gnu\"}]}}"}});
  row.expect("E203", row.build({}, env), 3, "config",
             {"2.11.json:1:", "at /base/cflags/0/when: unknown condition 'gnu'", "clang"});
}

TEST_CASE("E204 a profile extending one that does not exist", "[matrix]") {
  Row row;
  auto env = profile_dir(row, {{"2.11.json", "{\"profile\": \"2.11\", \"extends\": \"2.1\"}"}});
  row.expect("E204", row.build({}, env), 3, "config",
             {"cannot read profile " + row.dir / "data/profiles/2.1.json", "extended by"});
}

TEST_CASE("E205 profiles extending each other in a cycle", "[matrix]") {
  Row row;
  auto env = profile_dir(row, {{"2.11.json", "{\"profile\": \"2.11\", \"extends\": \"2.6\"}"},
                               {"2.6.json", "{\"profile\": \"2.6\", \"extends\": \"2.11\"}"}});
  row.expect("E205", row.build({}, env), 3, "config", {"extend each other in a cycle"});
}

TEST_CASE("E206 malformed JSON in a profile", "[matrix]") {
  Row row;
  auto env = profile_dir(row, {{"2.11.json", "{\"profile\": \"2.11\",,}"}});
  row.expect("E206", row.build({}, env), 3, "config",
             {row.dir / "data/profiles/2.11.json:1:", "malformed JSON"});
}

// Providers and environment.

TEST_CASE("E35 required variable unset", "[matrix]") {
  Row row;
  row.expect("E35", row.build({"--device", "npu"}), 4, "provider",
             {"device 'npu' (", "npu.json:", "Could not find ASCEND_HOME_PATH in env"});
}

TEST_CASE("E36 a variable whose default refers to itself", "[matrix]") {
  Row row;
  auto file = row.device_file(
      "self.json", "{\"device\": \"selfy\", \"include_dirs\": [\"${env:SELF:-${env:SELF}}\"]}");
  row.expect("E36", row.build({"--config", file, "--device", "selfy"}), 4, "provider",
             {"self.json:1", "SELF is not set"});
}

TEST_CASE("E49 a required variable that is set but empty", "[matrix]") {
  Row row;
  auto file = row.device_file(
      "acc.json", "{\"device\": \"acc\",\n \"include_dirs\": [\"${env:ACC_HOME}/include\"]}");
  row.expect("E49", row.build({"--config", file, "--device", "acc"}, {{"ACC_HOME", ""}}), 4,
             "provider", {"acc.json:2", "ACC_HOME is set but empty; set it to a value"});
}

TEST_CASE("E37 exec provider exits non-zero", "[matrix]") {
  Row row;
  RunResult r = row.build(row.exec_device("echo 'driver not loaded' >&2\nexit 9\n"));
  row.expect("E37", r, 4, "provider", {"exec provider", "ext.json", "exit code 9"});
  // The provider's stderr first, then kbuild's error line last (as a compiler's diagnostics).
  REQUIRE(r.err.find("driver not loaded") != std::string::npos);
  CHECK(r.err.find("driver not loaded") < r.err.find("kbuild: error[provider]"));
  CHECK(r.err.substr(r.err.find("kbuild: error[provider]")).find('\n') ==
        r.err.size() - 1 - r.err.find("kbuild: error[provider]"));
}

TEST_CASE("E385 exec provider program that is not executable", "[matrix]") {
  Row row;
  std::vector<std::string> args = row.exec_device("echo '{}'\n");
  fs::permissions(row.dir / "provider.sh",
                  fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::remove);
  row.expect("E385", row.build(args), 4, "provider",
             {"exec provider", row.dir / "provider.sh", "is not executable",
              "chmod +x " + row.dir / "provider.sh"});
}

TEST_CASE("E38 exec provider prints garbage", "[matrix]") {
  Row row;
  row.expect("E38", row.build(row.exec_device("echo 'hello, not json'\n")), 4, "provider",
             {"exec provider", "not JSON"});
}

TEST_CASE("E39 exec provider prints 100 MB", "[matrix]") {
  Row row;
  row.expect("E39", row.build(row.exec_device("head -c 100000000 /dev/zero | tr '\\0' x\n")), 4,
             "provider", {"exec provider", "more than 4 MiB"});
}

TEST_CASE("E40 exec provider hangs", "[matrix]") {
  Row row;
  auto start = std::chrono::steady_clock::now();
  row.expect("E40", row.build(row.exec_device("sleep 60\n", 1)), 4, "provider",
             {"exec provider", "timed out after 1s", "exec.timeout_s"});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

namespace {

// A device file asking pkg-config for `packages` (a JSON value) on its line 2,
// and the row's directory on PKG_CONFIG_PATH holding zeta.pc (`pc`, unless empty).
std::vector<std::string> matrix_pkg_config_device(Row& row, const std::string& packages,
                                                  const std::string& pc,
                                                  const std::string& more = "") {
  if (!pc.empty()) write_file(row.dir / "zeta.pc", pc);
  std::string file = row.device_file(
      "acc.json", "{\"device\": \"acc\",\n \"pkg_config\": " + packages + more + "}");
  return {"--config", file, "--device", "acc"};
}

const char* const kMatrixZetaPc =
    "Name: Zeta\nDescription: an SDK\nVersion: 2.1\nCflags: -DZETA\nLibs: -lzeta\n";

}  // namespace

TEST_CASE("E270 pkg_config that is not an array", "[matrix]") {
  Row row;
  row.expect("E270", row.build(matrix_pkg_config_device(row, "\"zeta\"", "")), 3, "config",
             {"acc.json:2:", "at /pkg_config: expected an array of pkg-config packages"});
}

TEST_CASE("E271 a pkg_config entry that is not one package", "[matrix]") {
  Row row;
  for (const char* entry : {"--static", "zeta eta", "zeta >="})
    row.expect("E271",
               row.build(matrix_pkg_config_device(row, "[\"" + std::string(entry) + "\"]", "")), 3,
               "config",
               {"acc.json:2:",
                "at /pkg_config/0: '" + std::string(entry) + "' is not a pkg-config package"});
}

TEST_CASE("E272 pkg_config beside exec", "[matrix]") {
  Row row;
  row.expect("E272",
             row.build(matrix_pkg_config_device(row, "[\"zeta\"]", "",
                                                ", \"exec\": {\"command\": [\"./p.sh\"]}")),
             3, "config", {"acc.json:2:", "at /pkg_config: an exec provider prints every option"});
}

TEST_CASE("E276 a pkg_config package's .pc file world-writable", "[matrix]") {
  Row row;
  auto args = matrix_pkg_config_device(row, "[\"zeta\"]", kMatrixZetaPc);
  fs::permissions(row.dir / "zeta.pc", fs::perms::others_write, fs::perm_options::add);
  row.expect("E276", row.build(args, {{"PKG_CONFIG_PATH", row.dir.str()}}), 3, "config",
             {"device 'acc' (", "acc.json:2)", "pkg-config file " + row.dir / "zeta.pc",
              "world-writable"});
}

TEST_CASE("E273 a pkg_config package pkg-config does not find", "[matrix]") {
  Row row;
  row.expect("E273", row.build(matrix_pkg_config_device(row, "[\"zeta\"]", "")), 4, "provider",
             {"acc.json:2)", "pkg-config package 'zeta' not found (PKG_CONFIG_PATH is not set)",
              "set PKG_CONFIG_PATH to the directory holding zeta.pc"});
}

TEST_CASE("E274 a pkg_config package of another version", "[matrix]") {
  Row row;
  RunResult r = row.build(matrix_pkg_config_device(row, "[\"zeta >= 3\"]", kMatrixZetaPc),
                          {{"PKG_CONFIG_PATH", row.dir.str()}});
  row.expect("E274", r, 4, "provider",
             {"acc.json:2)", "pkg-config package 'zeta' is version 2.1 (" + row.dir / "zeta.pc",
              "asks for 'zeta >= 3'", "PKG_CONFIG_PATH=" + row.dir.str()});
  CHECK(r.err.find("required version is '>= 3'") != std::string::npos);  // pkg-config's own
}

TEST_CASE("E275 pkg_config without pkg-config", "[matrix]") {
  Row row;
  auto args = matrix_pkg_config_device(row, "[\"zeta\"]", kMatrixZetaPc);
  row.expect("E275", row.build(args, {{"PKG_CONFIG", row.dir / "no-such-pkg-config"}}), 4,
             "provider", {"acc.json:2)", "PKG_CONFIG names '" + row.dir / "no-such-pkg-config"});
  // Not on PATH (kbuild's compiler is named by its path, so it is still found).
  row.expect("E275", row.build(args, {{"PATH", row.dir.str()}, {"CXX", "/usr/bin/g++"}}), 4,
             "provider",
             {"pkg_config needs pkg-config, which is not on PATH", "apt-get install pkgconf",
              "set PKG_CONFIG to its path"});
}

TEST_CASE("E277 a pkg_config package that requires one not found", "[matrix]") {
  Row row;
  RunResult r =
      row.build(matrix_pkg_config_device(row, "[\"zeta\"]",
                                         "Name: Zeta\nDescription: z\nVersion: 3\nRequires: eta\n"
                                         "Cflags: -DZETA\n"),
                {{"PKG_CONFIG_PATH", row.dir.str()}});
  row.expect(
      "E277", r, 4, "provider",
      {"acc.json:2)", "pkg-config package 'zeta' requires a package pkg-config does not find",
       "set PKG_CONFIG_PATH to include"});
  CHECK(r.err.find("'eta', required by 'zeta'") != std::string::npos);  // pkg-config says which
}

TEST_CASE("E42 compiler missing", "[matrix]") {
  Row row;
  row.expect("E42", row.build({}, {{"CXX", row.dir / "missing/g++"}}), 10, "compile",
             {"compiler '" + row.dir / "missing/g++" + "' not found"});
  row.expect("E42", row.build({"--cxx", "no-such-compiler-xyz"}), 10, "compile",
             {"compiler 'no-such-compiler-xyz' not found", "--cxx"});
}

TEST_CASE("E43 compiler killed by a signal", "[matrix]") {
  Row row;
  write_file(row.dir / "crashing-g++", "#!/bin/sh\nkill -SEGV $$\n", true);
  row.expect("E43", row.build({"--cxx", row.dir / "crashing-g++"}), 5, "compile",
             {"killed by signal 11"});
}

TEST_CASE("E44 compiler that never ends, with --timeout", "[matrix]") {
  Row row;
  write_file(row.dir / "slow-g++", "#!/bin/sh\nsleep 60\n", true);
  row.expect("E44", row.build({"--cxx", row.dir / "slow-g++", "--timeout", "0.5"}), 5, "compile",
             {"--timeout 0.500 s", "left as it was"});
}

TEST_CASE("E45 build-many manifest malformed", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json", "[{\n");
  row.expect("E45", row.kbuild({"build-many", row.dir / "m.json"}), 3, "config",
             {row.dir / "m.json:2:", "malformed JSON"});
}

// Caches.

TEST_CASE("E50 cache stats with no cache directory", "[matrix]") {
  Row row;
  row.expect("E50", row.kbuild({"cache", "stats"}, {{"HOME", ""}, {"XDG_CACHE_HOME", ""}}), 2,
             "usage", {"no cache directory", "set KBUILD_CACHE_DIR"});
}

TEST_CASE("E51 cache clear on a directory that is not kbuild's", "[matrix]") {
  Row row;
  write_file(row.dir / "cache/tmp/mine.txt", "mine\n");
  row.expect("E51", row.kbuild({"cache", "clear"}, {{"KBUILD_CACHE_DIR", row.dir / "cache"}}), 2,
             "usage", {"is not kbuild's", "CACHEDIR.TAG"});
  CHECK(read_file(row.dir / "cache/tmp/mine.txt") == "mine\n");
}

TEST_CASE("E52 cache stats on a cache directory others can write", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "cache");
  fs::permissions(row.dir / "cache", fs::perms::all);
  row.expect("E52", row.kbuild({"cache", "stats"}, {{"KBUILD_CACHE_DIR", row.dir / "cache"}}), 2,
             "usage", {"world-writable", "chmod go-w"});
}

TEST_CASE("E53 a launcher that exits 0 without writing the output", "[matrix]") {
  Row row;
  row.expect("E53", row.build({"--launcher", "true"}), 5, "compile",
             {"exited 0 but its output is not usable", "left as it was"});
}

TEST_CASE("E90 build-many manifest with two builds of one output", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [\n  [\"" + row.kernel +
                 "\", \"-o\", \"" + row.output + "\"],\n  [\"" + row.kernel + "\", \"-o\", \"" +
                 row.dir / "sub/../k.so" + "\"]\n]}");
  fs::create_directories(row.dir / "sub");
  row.expect("E90", row.kbuild({"build-many", row.dir / "m.json"}), 2, "usage",
             {row.dir / "m.json:3:", "at /builds/1", "also the output of /builds/0"});
  // The same file through a link to its directory: compared where it really is.
  fs::create_directory_symlink(".", row.dir / "here");
  write_file(row.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [\n  [\"" + row.kernel +
                 "\", \"-o\", \"" + row.output + "\"],\n  [\"" + row.kernel + "\", \"-o\", \"" +
                 row.dir / "here/k.so" + "\"]\n]}");
  row.expect("E90", row.kbuild({"build-many", row.dir / "m.json"}), 2, "usage",
             {"at /builds/1: output " + row.dir / "here/k.so", "also the output of /builds/0"});
}

TEST_CASE("E91 build-many manifest whose build runs build-many", "[matrix]") {
  Row row;
  write_file(row.dir / "inner.json", "{\"builds\": [[\"--no-torch\", \"" + row.kernel +
                                         "\", \"-o\", \"" + row.output + "\"]]}");
  write_file(row.dir / "m.json",
             "{\"builds\": [\n  [\"build-many\", \"" + row.dir / "inner.json" + "\"]\n]}");
  row.expect("E91", row.kbuild({"build-many", row.dir / "m.json"}), 3, "config",
             {row.dir / "m.json:2:", "at /builds/0/0", "build-many"});
  // A manifest naming itself, through `common`: refused, not run without end.
  write_file(row.dir / "self.json",
             "{\"common\": [\"build-many\"], \"builds\": [[\"" + row.dir / "self.json" + "\"]]}");
  row.expect("E91", row.kbuild({"build-many", row.dir / "self.json"}), 3, "config",
             {"at /common/0", "build-many"});
}

TEST_CASE("E92 build-many manifest that is a FIFO or a device node", "[matrix]") {
  Row row;
  REQUIRE(mkfifo((row.dir / "m.json").c_str(), 0644) == 0);
  for (const std::string& manifest : {row.dir / "m.json", std::string("/dev/null")}) {
    // Under timeout: reading a FIFO nobody writes would block for ever.
    RunResult r =
        run({"/usr/bin/timeout", "-k", "5", "20", kbuild_binary(), "build-many", manifest},
            {{"HOME", row.home.str()}});
    row.expect("E92", r, 3, "config", {"manifest " + manifest + ": not a regular file"});
  }
}

TEST_CASE("E93 build-many manifest whose build writes the manifest itself", "[matrix]") {
  Row row;
  const std::string m = row.dir / "m.json";
  const std::string text = "{\"builds\": [\n  [\"--no-torch\", \"" + row.kernel + "\", \"-o\", \"" +
                           row.output + "\", \"--report\", \"" + m + "\"]\n]}";
  write_file(m, text);
  row.expect("E93", row.kbuild({"build-many", m}), 2, "usage",
             {m + ":2:", "at /builds/0", "--report " + m + " is the manifest " + m + " itself",
              "choose another"});
  CHECK(read_file(m) == text);
}

TEST_CASE("E94 build-many manifest with a --report in common", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json", "{\"common\": [\"--no-torch\", \"--report\", \"" +
                                     row.dir / "r.json" + "\"],\n \"builds\": [[\"" + row.kernel +
                                     "\", \"-o\", \"" + row.output + "\"]]}");
  row.expect("E94", row.kbuild({"build-many", row.dir / "m.json"}), 2, "usage",
             {"at /common/1", "--report in common", "its own --report"});
  CHECK_FALSE(fs::exists(row.dir / "r.json"));
}

TEST_CASE("E381 build-many --baseline naming a file that does not exist", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json", "{\"common\": [\"--no-torch\"], \"builds\": [[\"" + row.kernel +
                                     "\", \"-o\", \"" + row.output + "\"]]}");
  row.expect("E381",
             row.kbuild({"build-many", row.dir / "m.json", "--baseline", row.dir / "nightly.json"}),
             2, "usage", {row.dir / "nightly.json", "--baseline-missing=empty"});
}

TEST_CASE("E382 build-many --baseline-missing without --baseline", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json", "{\"common\": [\"--no-torch\"], \"builds\": [[\"" + row.kernel +
                                     "\", \"-o\", \"" + row.output + "\"]]}");
  for (const char* value : {"--baseline-missing=empty", "--baseline-missing=error"})
    row.expect("E382", row.kbuild({"build-many", row.dir / "m.json", value}), 2, "usage",
               {"--baseline-missing", "give --baseline PREVIOUS.json too"});
}

// Writes that would follow or clobber; numbers; bytes; depth (E70-E89).

namespace {

// A FIFO at `path` (a special file any user can make), and, as root, a
// character device node beside it: both must survive a build naming them.
std::vector<std::string> special_files(const std::string& dir) {
  std::vector<std::string> out;
  REQUIRE(mkfifo((dir + "/fifo").c_str(), 0644) == 0);
  out.push_back(dir + "/fifo");
  if (geteuid() == 0 && mknod((dir + "/null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0)
    out.push_back(dir + "/null");
  return out;
}

bool is_special(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode));
}

}  // namespace

TEST_CASE("E70 output that is a FIFO or a device node", "[matrix]") {
  Row row;
  for (const std::string& special : special_files(row.dir.str())) {
    row.expect("E70", row.kbuild({"--no-torch", row.kernel, "-o", special}), 9, "usage",
               {"output " + special, "not a regular file"});
    CHECK(is_special(special));
  }
}

TEST_CASE("E71 --report that is a FIFO or a device node", "[matrix]") {
  Row row;
  for (const std::string& special : special_files(row.dir.str())) {
    row.expect("E71", row.build({"--report", special}), 9, "usage",
               {"--report", special, "not a regular file"});
    CHECK(is_special(special));
  }
}

TEST_CASE("E72 --compile-commands that is a FIFO or a device node", "[matrix]") {
  Row row;
  for (const std::string& special : special_files(row.dir.str())) {
    row.expect("E72", row.build({"--compile-commands", special}), 9, "usage",
               {"--compile-commands", special, "not a regular file"});
    CHECK(is_special(special));
  }
}

TEST_CASE("E73 --report naming a source or the output", "[matrix]") {
  Row row;
  std::string source = read_file(row.kernel);
  row.expect("E73", row.build({"--report", row.kernel}), 2, "usage",
             {"--report " + row.kernel, "is also a source"});
  CHECK(read_file(row.kernel) == source);
  row.expect("E73", row.build({"--report", row.output}), 2, "usage",
             {"--report " + row.output, "is also the output"});
}

TEST_CASE("E74 --timeout out of range: inf, nan, 1e300", "[matrix]") {
  Row row;
  for (const char* bad : {"inf", "nan", "1e300", "-inf"})
    row.expect("E74", row.build({"--timeout", bad}), 2, "usage",
               {"--timeout", std::string("'") + bad + "'", "(0, 604800]"});
}

TEST_CASE("E75 cache size out of range: nan, inf, 1e30, in option and variable", "[matrix]") {
  Row row;
  for (const char* bad : {"nan", "inf", "1e30", "-0", "nanM"}) {
    row.expect("E75", row.build({"--cache-max-size", bad}), 2, "usage",
               {std::string("'") + bad + "'", "500M"});
    row.expect("E75", row.build({}, {{"KBUILD_CACHE_MAX_SIZE", bad}}), 2, "usage",
               {"KBUILD_CACHE_MAX_SIZE", std::string("'") + bad + "'"});
  }
}

TEST_CASE("E76 build-many -j out of range", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json", "{\"builds\": []}");
  for (const char* bad : {"-1", "100000", "99999999999999999999"})
    row.expect("E76", row.kbuild({"build-many", "-j", bad, row.dir / "m.json"}), 2, "usage",
               {"--jobs", "1 to 1024"});
}

TEST_CASE("E77 NUL inside a device-file value", "[matrix]") {
  Row row;
  auto file = row.device_file("nul.json", "{\"device\": \"x\", \"cflags\": [\"O3\\u0000 -evil\"]}");
  row.expect("E77", row.build({"--config", file, "--device", "x"}), 3, "config",
             {file + ":1:", "/cflags/0", "NUL"});
}

TEST_CASE("E78 NUL inside an exec provider value", "[matrix]") {
  Row row;
  row.expect("E78", row.build(row.exec_device("echo '{\"cflags\": [\"O3\\u0000x\"]}'\n")), 4,
             "provider", {"exec provider", "cflags", "NUL"});
}

TEST_CASE("E79 exec provider prints JSON nested 100000 deep", "[matrix]") {
  Row row;
  row.expect("E79",
             row.build(row.exec_device("python3 -c 'print(\"[\" * 100000 + \"]\" * 100000)'\n")), 4,
             "provider", {"exec provider", "nested deeper than 64"});
}

TEST_CASE("E80 device file and manifest nested 30000 deep", "[matrix]") {
  Row row;
  std::string deep = std::string(30000, '[') + std::string(30000, ']');
  auto file = row.device_file("deep.json", "{\"device\": \"x\", \"description\": " + deep + "}");
  auto start = std::chrono::steady_clock::now();
  row.expect("E80", row.build({"--config", file}), 3, "config",
             {file + ":1:", "nested deeper than 64"});
  write_file(row.dir / "m.json", "{\"builds\": " + deep + "}");
  row.expect("E80", row.kbuild({"build-many", row.dir / "m.json"}), 3, "config",
             {row.dir / "m.json:1:", "nested deeper than 64"});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("E81 build-many manifest larger than 16 MiB", "[matrix]") {
  Row row;
  write_file(row.dir / "m.json",
             "{\"builds\": [], \"common\": [\"" + std::string(17 << 20, 'x') + "\"]}");
  row.expect("E81", row.kbuild({"build-many", row.dir / "m.json"}), 3, "config",
             {row.dir / "m.json", "larger than 16 MiB"});
}

TEST_CASE("E82 compile database entry whose file or output is not a string", "[matrix]") {
  // The database is someone else's format: left as it is, exit 9, but the
  // build itself is done.
  Row row;
  std::string db = row.dir / "compile_commands.json";
  const std::string foreign = "[{\"file\": 1, \"output\": [\"k.so\"]}]\n";
  write_file(db, foreign);
  RunResult r = row.build({"--compile-commands", db});
  INFO(r.err);
  CHECK(r.exit_code == documented_exit_codes().at("E82"));
  CHECK(r.exit_code == 9);
  std::vector<std::string> lines = error_lines(r.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("kbuild: error[usage]: --compile-commands") == 0);
  CHECK(lines[0].find("left as it is") != std::string::npos);
  CHECK(read_file(db) == foreign);
  CHECK(read_file(row.output) != kEarlierOutput);  // built
}

TEST_CASE("E83 device file launcher world-writable, or relative to the device file", "[matrix]") {
  Row row;
  write_file(row.dir / "wrap.sh", "#!/bin/sh\nexec \"$@\"\n", true);
  fs::permissions(row.dir / "wrap.sh", fs::perms::others_write, fs::perm_options::add);
  auto file = row.device_file("l.json", "{\"device\": \"x\", \"launcher\": \"./wrap.sh\"}");
  row.expect("E83", row.build({"--config", file, "--device", "x"}), 3, "config",
             {"launcher", row.dir / "wrap.sh", "world-writable"});
  // Trusted, it is found beside the device file, not in the current directory.
  fs::permissions(row.dir / "wrap.sh", fs::perms::others_write, fs::perm_options::remove);
  RunResult r = row.build({"--config", file, "--device", "x", "-v"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(row.dir / "wrap.sh") != std::string::npos);
}

TEST_CASE("E84 exec provider script argument world-writable", "[matrix]") {
  Row row;
  write_file(row.dir / "p.sh", "echo '{}'\n");
  fs::permissions(row.dir / "p.sh", fs::perms::others_write, fs::perm_options::add);
  auto file = row.device_file(
      "s.json", "{\"device\": \"ext\", \"exec\": {\"command\": [\"/bin/sh\", \"p.sh\"]}}");
  row.expect("E84", row.build({"--config", file, "--device", "ext"}), 3, "config",
             {"exec provider", row.dir / "p.sh", "world-writable"});
  // Trusted, the script is found beside the device file.
  fs::permissions(row.dir / "p.sh", fs::perms::others_write, fs::perm_options::remove);
  RunResult r = row.build({"--config", file, "--device", "ext"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("E85 device file reached through a symlink into a world-writable directory", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "shared");
  fs::permissions(row.dir / "shared", fs::perms::all | fs::perms::sticky_bit);
  write_file(row.dir / "shared/dev.json", "{\"device\": \"x\"}");
  fs::create_directories(row.dir / "conf");
  fs::create_symlink(row.dir / "shared/dev.json", row.dir / "conf/dev.json");
  row.expect("E85", row.build({}, {{"KBUILD_CONFIG_PATH", row.dir / "conf"}}), 3, "config",
             {row.dir / "shared", "world-writable"});
  row.expect("E85", row.build({"--config", row.dir / "conf/dev.json"}), 3, "config",
             {row.dir / "shared", "world-writable"});
}

// Compiler mode (kbuild cc).

TEST_CASE("E170 kbuild cc without a compiler command", "[matrix]") {
  Row row;
  row.expect("E170", row.kbuild({"cc", "--"}), 2, "usage",
             {"cc needs a compiler command", "kbuild cc -- g++"});
  row.expect("E170", row.kbuild({"cc", "-c", row.kernel, "-o", row.output}), 2, "usage",
             {"cc needs a compiler command"});
}

TEST_CASE("E171 kbuild cc with a compiler that is not found", "[matrix]") {
  Row row;
  row.expect("E171",
             row.kbuild({"cc", "--", "no-such-g++", "-shared", row.kernel, "-o", row.output}), 10,
             "compile", {"compiler 'no-such-g++' not found on PATH", "name its path"});
  row.expect(
      "E171",
      row.kbuild({"cc", "--", row.dir / "nope/g++", "-shared", row.kernel, "-o", row.output}), 10,
      "compile", {"nope/g++ not found or not executable"});
}

// The ISA answer (kbuild isa).

TEST_CASE("E250 kbuild isa without torch", "[matrix]") {
  Row row;
  // No --torch-root, and a Python that is not there to find one.
  row.expect(
      "E250",
      row.kbuild({"isa", "--json", "--python", row.dir / "no-python"}, {{"KBUILD_TORCH_ROOT", ""}}),
      2, "usage", {"kbuild isa needs torch's headers", "torch not found", "--torch-root"});
}

TEST_CASE("E251 kbuild isa with a compiler that is not found", "[matrix]") {
  Row row;
  make_fake_torch(row.dir / "torch", false);
  row.expect("E251",
             row.kbuild({"isa", "--torch-root", row.dir / "torch", "--cxx", "no-such-g++",
                         "--python-include", "/usr/include", "--python-libdir", "/usr/lib"}),
             10, "compile", {"compiler 'no-such-g++' not found on PATH", "--cxx"});
}

// Plugins.

TEST_CASE("E110 --plugin naming no registered device", "[matrix]") {
  Row row;
  row.expect("E110", row.build({"--plugin", "tpu"}), 2, "usage",
             {"unknown plugin 'tpu' (--plugin)", "no device file registers it", "plugins: npu"});
}

TEST_CASE("E111 --plugin naming a device whose file has no plugin section", "[matrix]") {
  Row row;
  std::string file = row.device_file("acc.json", "{\"device\": \"acc\"}");
  row.expect("E111", row.build({"--config", file, "--plugin", "acc"}), 2, "usage",
             {"unknown plugin 'acc'", "acc.json has no 'plugin' section"});
}

TEST_CASE("E112 TORCHINDUCTOR_NPU_BACKEND naming no backend", "[matrix]") {
  Row row;
  row.expect(
      "E112",
      row.build({"--device", "npu"},
                {{"ASCEND_HOME_PATH", row.dir.str()}, {"TORCHINDUCTOR_NPU_BACKEND", "nope"}}),
      2, "usage",
      {"TORCHINDUCTOR_NPU_BACKEND=nope: device 'npu' has no backend 'nope'", "triton", "npu.json"});
}

namespace {
// A device file with a plugin section, `plugin` spliced in.
std::string plugin_file(Row& row, const std::string& plugin) {
  return row.device_file(
      "p.json", "{\"device\": \"acc\", \"backends\": {\"plain\": {}}, \"plugin\": " + plugin + "}");
}
}  // namespace

TEST_CASE("E113 a plugin backend the device does not offer", "[matrix]") {
  Row row;
  std::string file = plugin_file(row, "{\"backends\": {\"plain\": {}, \"fast\": {}}}");
  row.expect("E113", row.build({"--config", file}), 3, "config",
             {"p.json:1:",
              "at /plugin/backends/fast: plugin backend 'fast' is not one of the "
              "device's backends"});
}

TEST_CASE("E114 a base-layer edit naming no list", "[matrix]") {
  Row row;
  std::string file = plugin_file(
      row, "{\"backends\": {\"plain\": {\"base\": [{\"list\": \"flags\", \"drop\": \"O3\"}]}}}");
  row.expect("E114", row.build({"--config", file}), 3, "config",
             {"p.json:1:", "at /plugin/backends/plain/base/0/list: 'flags' is not one of the 7"});
}

TEST_CASE("E115 a release that is not a version", "[matrix]") {
  Row row;
  std::string file = row.device_file(
      "p.json",
      "{\"device\": \"acc\", \"package\": {\"name\": \"acc\", \"root\": \"/opt/acc\"}, "
      "\"plugin\": {\"backends\": {\"plain\": {}}, \"releases\": {\"latest\": {}}}}");
  row.expect("E115", row.build({"--config", file}), 3, "config",
             {"p.json:1:", "at /plugin/releases/latest: 'latest' is not a release version"});
}

TEST_CASE("E242 a release's backends naming a backend the plugin does not have", "[matrix]") {
  Row row;
  std::string file = row.device_file(
      "p.json",
      "{\"device\": \"acc\", \"package\": {\"name\": \"acc\", \"root\": \"/opt/acc\"}, "
      "\"plugin\": {\"backends\": {\"plain\": {}}, \"releases\": {\"1.0.0\": "
      "{\"backends\": [\"plain\", \"fast\"]}}}}");
  row.expect("E242", row.build({"--config", file}), 3, "config",
             {"p.json:1:",
              "at /plugin/releases/1.0.0/backends/1: 'fast' is not one of the plugin's backends "
              "(plain)"});
}

TEST_CASE("E243 KBUILD_TORCH_NPU_RELEASE naming no release", "[matrix]") {
  Row row;
  row.expect("E243",
             row.build({"--device", "npu"}, {{"ASCEND_HOME_PATH", row.dir.str()},
                                             {"KBUILD_TORCH_NPU_RELEASE", "nightly"}}),
             2, "usage",
             {"KBUILD_TORCH_NPU_RELEASE=nightly: torch_npu has no release 'nightly' (releases: ",
              "2.12.0.post1", "master", "name one of them, or a version like 2.12.0"});
}

TEST_CASE("E244 a backend the release reproduced does not have", "[matrix]") {
  Row row;
  write_file(row.dir / "torch_npu/version.py", "__version__ = '2.12.0'\n");
  row.expect(
      "E244",
      row.build({"--device", "npu", "--torch-npu-root", row.dir / "torch_npu", "--backend", "dvm"},
                {{"ASCEND_HOME_PATH", row.dir.str()}}),
      2, "usage",
      {"device 'npu' has no backend 'dvm' in release 2.12.0 (its backends: triton, mlir, "
       "in ",
       "npu.json): choose one of them, or name another release with "
       "KBUILD_TORCH_NPU_RELEASE"});
}

TEST_CASE("E245 a release's torch line that is not one", "[matrix]") {
  Row row;
  std::string file = row.device_file(
      "p.json",
      "{\"device\": \"acc\", \"package\": {\"name\": \"acc\", \"root\": \"/opt/acc\"}, "
      "\"plugin\": {\"backends\": {\"plain\": {}}, \"releases\": {\"1.0.0\": "
      "{\"torch\": [\"2.x\"]}}}}");
  row.expect(
      "E245", row.build({"--config", file}), 3, "config",
      {"p.json:1:", "at /plugin/releases/1.0.0/torch/0: '2.x' is not a torch line like 2.12"});
}

TEST_CASE("E246 a version that two named releases list", "[matrix]") {
  Row row;
  std::string file = row.device_file(
      "p.json",
      "{\"device\": \"acc\", \"package\": {\"name\": \"acc\", \"root\": \"/opt/acc\"}, "
      "\"plugin\": {\"backends\": {\"plain\": {}}, \"releases\": {\"main\": {\"versions\": "
      "[\"2.14.0\"]}, \"nightly\": {\"versions\": [\"2.14.0\"]}}}}");
  row.expect("E246", row.build({"--config", file}), 3, "config",
             {"p.json:1:",
              "at /plugin/releases/nightly/versions/0: version 2.14.0 already names release "
              "main; a version names one release"});
}

TEST_CASE("E240 a release's base edits for a backend the plugin does not have", "[matrix]") {
  Row row;
  std::string file = row.device_file(
      "p.json",
      "{\"device\": \"acc\", \"package\": {\"name\": \"acc\", \"root\": \"/opt/acc\"}, "
      "\"plugin\": {\"backends\": {\"plain\": {}}, \"releases\": {\"1.0.0\": "
      "{\"base\": {\"fast\": []}}}}}");
  row.expect("E240", row.build({"--config", file}), 3, "config",
             {"p.json:1:",
              "at /plugin/releases/1.0.0/base/fast: 'fast' is not one of the "
              "plugin's backends (plain)"});
}

TEST_CASE("E241 a release's base edits that are not an array", "[matrix]") {
  Row row;
  std::string file = row.device_file(
      "p.json",
      "{\"device\": \"acc\", \"package\": {\"name\": \"acc\", \"root\": \"/opt/acc\"}, "
      "\"plugin\": {\"backends\": {\"plain\": {}}, \"releases\": {\"1.0.0\": "
      "{\"base\": {\"plain\": {\"drop\": \"O3\"}}}}}}");
  row.expect("E241", row.build({"--config", file}), 3, "config",
             {"p.json:1:",
              "at /plugin/releases/1.0.0/base/plain: expected an array of edits, "
              "got an object"});
}

// Remote cache: checked before anything runs (nothing listens on these).

TEST_CASE("E130 --remote-cache not a remote cache address", "[matrix]") {
  Row row;
  row.expect("E130", row.build({"--remote-cache", "ftp://cache:6379"}), 2, "usage",
             {"--remote-cache", "ftp://cache:6379", "redis://HOST:PORT", "http(s)://HOST"});
}

TEST_CASE("E131 KBUILD_REMOTE_CACHE with a bad port", "[matrix]") {
  Row row;
  row.expect("E131", row.build({}, {{"KBUILD_REMOTE_CACHE", "redis://cache:99999"}}), 2, "usage",
             {"KBUILD_REMOTE_CACHE", "bad port"});
}

TEST_CASE("E132 a signing key that is not 64 hex digits", "[matrix]") {
  Row row;
  row.expect("E132",
             row.build({}, {{"KBUILD_REMOTE_CACHE", "redis://127.0.0.1:1"},
                            {"KBUILD_REMOTE_CACHE_SIGNING_KEY", "not-a-key"}}),
             2, "usage", {"KBUILD_REMOTE_CACHE_SIGNING_KEY", "64 hex digits", "keygen"});
}

TEST_CASE("E133 a verify key that does not belong to the signing key", "[matrix]") {
  Row row;
  row.expect("E133",
             row.build({}, {{"KBUILD_REMOTE_CACHE", "redis://127.0.0.1:1"},
                            {"KBUILD_REMOTE_CACHE_SIGNING_KEY", std::string(64, '1')},
                            {"KBUILD_REMOTE_CACHE_VERIFY_KEY", std::string(64, '2')}}),
             2, "usage", {"KBUILD_REMOTE_CACHE_VERIFY_KEY", "public key"});
}

TEST_CASE("E134 a remote cache timeout that is not a number", "[matrix]") {
  Row row;
  row.expect("E134",
             row.build({}, {{"KBUILD_REMOTE_CACHE", "redis://127.0.0.1:1"},
                            {"KBUILD_REMOTE_CACHE_TIMEOUT_MS", "soon"}}),
             2, "usage", {"KBUILD_REMOTE_CACHE_TIMEOUT_MS", "'soon'", "milliseconds"});
}

TEST_CASE("E135 a device file's remote_cache address not a remote cache address", "[matrix]") {
  Row row;
  auto file = row.device_file(
      "rc.json", R"({"device": "x", "remote_cache": {"address": "ftp://cache:6379"}})");
  // Checked when the file is loaded, even though the variable would win.
  row.expect("E135",
             row.build({"--config", file, "--device", "x"},
                       {{"KBUILD_REMOTE_CACHE", "redis://127.0.0.1:1"}}),
             3, "config",
             {"rc.json:1:", "/remote_cache/address", "ftp://cache:6379", "redis://HOST:PORT"});
}

TEST_CASE("E136 an unknown key in a device file's remote_cache", "[matrix]") {
  Row row;
  auto file =
      row.device_file("rc.json", R"({"device": "x", "remote_cache": {"adress": "redis://c:1"}})");
  row.expect("E136", row.build({"--config", file, "--device", "x"}), 3, "config",
             {"rc.json:1:", "/remote_cache/adress",
              "unknown key 'adress'; did you mean 'address'? (known: address)"});
}

TEST_CASE("every row of docs/errors.md has its test here", "[matrix]") {
  // The ids this file tests; a row documented but untested fails here.
  std::ifstream self(source_root() + "/tests/faults/matrix_test.cpp");
  std::string text((std::istreambuf_iterator<char>(self)), {});
  REQUIRE(documented_exit_codes().size() >= 30);
  for (const auto& [id, code] : documented_exit_codes()) {
    INFO(id);
    CHECK(text.find("TEST_CASE(\"" + id + " ") != std::string::npos);
  }
}

TEST_CASE("E137 an address whose password lacks its colon", "[matrix]") {
  Row row;
  RunResult r = row.build({}, {{"KBUILD_REMOTE_CACHE", "redis://Pa55word@cache:6379"}});
  row.expect("E137", r, 2, "usage", {"redis://***@cache:6379", "a user without a password"});
  CHECK(r.err.find("Pa55word") == std::string::npos);
}

TEST_CASE("E138 Ctrl-C while the remote cache answers", "[matrix]") {
  Row row;
  // A server that accepts (the kernel's backlog) and never answers.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  const auto start = std::chrono::steady_clock::now();
  RunResult r =
      run({"/usr/bin/timeout", "--preserve-status", "-s", "INT", "1", kbuild_binary(), "--no-torch",
           row.kernel, "-o", row.output},
          {{"HOME", row.home.str()},
           {"XDG_CACHE_HOME", row.home / ".cache"},
           {"XDG_CONFIG_HOME", row.home / ".config"},
           {"KBUILD_REMOTE_CACHE", "redis://127.0.0.1:" + std::to_string(ntohs(addr.sin_port))},
           {"KBUILD_REMOTE_CACHE_TIMEOUT_MS", "30000"}},
          {"KBUILD_CACHE_DIR"});
  row.expect(
      "E138", r, 130, "interrupted",
      {"interrupted by signal 2", "while the remote cache answered", "nothing was compiled"});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));  // not 30 s
  ::close(fd);
}

TEST_CASE("E139 a mistyped scheme before a password", "[matrix]") {
  Row row;
  const std::string report = row.dir / "report.json";
  RunResult r =
      row.build({"--report", report}, {{"KBUILD_REMOTE_CACHE", "redis:/:Pa55 w/rd@cache:6379"}});
  row.expect("E139", r, 2, "usage",
             {"KBUILD_REMOTE_CACHE: 'redis:/***@cache:6379'",
              "not a redis://, unix://, http:// or https:// address"});
  const std::string written = read_file(report);
  CHECK(written.find("redis:/***@cache:6379") != std::string::npos);
  for (const std::string& part : {"Pa55", "w/rd"}) {
    CHECK(r.err.find(part) == std::string::npos);
    CHECK(written.find(part) == std::string::npos);
  }
}

TEST_CASE("E160 kbuild reached again through the compiler it runs", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "one");
  fs::create_directories(row.dir / "two");
  fs::copy_file(kbuild_binary(), row.dir / "one/g++");
  fs::copy_file(kbuild_binary(), row.dir / "two/g++");
  RunResult r = run({"/usr/bin/timeout", "20", row.dir / "one/g++", "-shared", "-fPIC", row.kernel,
                     "-o", row.output},
                    {{"HOME", row.home.str()},
                     {"PATH", (row.dir / "one") + ":" + (row.dir / "two") + ":/usr/bin:/bin"}});
  row.expect("E160", r, 2, "usage",
             {"kbuild started itself as the compiler", row.dir / "two/g++", row.dir / "one/g++"});
}

TEST_CASE("E161 KBUILD_CC_COMPILER not an absolute path", "[matrix]") {
  Row row;
  fs::create_directories(row.dir / "masq");
  fs::create_symlink(kbuild_binary(), row.dir / "masq/g++");
  RunResult r = run({row.dir / "masq/g++", "-shared", "-fPIC", row.kernel, "-o", row.output},
                    {{"HOME", row.home.str()}, {"KBUILD_CC_COMPILER", "g++"}});
  row.expect("E161", r, 2, "usage", {"KBUILD_CC_COMPILER='g++'", "not an absolute path"});
}

TEST_CASE("E162 kbuild cc with no compiler", "[matrix]") {
  Row row;
  row.expect("E162", row.kbuild({"cc", "-c", row.kernel, "-o", row.output}), 2, "usage",
             {"cc needs a compiler command", "kbuild cc --help"});
}

TEST_CASE("E346 --check-load with a value other than strict", "[matrix]") {
  Row row;
  row.expect("E346", row.build({"--check-load=always"}), 2, "usage",
             {"--check-load: takes no value, or =strict, not 'always'"});
}

TEST_CASE("E347 --check-load=strict on a library that needs the link's dirs", "[matrix]") {
  Row row;
  write_file(row.dir / "dep.cpp", "extern \"C\" int dep() { return 3; }\n");
  fs::create_directories(row.dir / "lib");
  REQUIRE(run_kbuild({"cc", "--", "/usr/bin/g++", "-shared", "-fPIC", row.dir / "dep.cpp", "-o",
                      row.dir / "lib/libdep.so"},
                     row.home.str(), {{"KBUILD_NO_CACHE", "1"}})
              .exit_code == 0);
  write_file(row.kernel, "extern \"C\" int dep();\nextern \"C\" int f() { return dep(); }\n");
  row.expect("E347", row.build({"--check-load=strict", "-L", row.dir / "lib", "-l", "dep"}), 7,
             "load",
             {"loads only with the link's library dirs (" + row.dir / "lib" + ")",
              "\"Wl,-rpath," + row.dir / "lib" + "\""});
}

TEST_CASE("E383 --check-load on a library with a symbol nothing it loads defines", "[matrix]") {
  Row row;
  write_file(row.kernel,
             "void acc_launch(int);\nextern \"C\" int f() { acc_launch(1); return 1; }\n");
  fs::create_directories(row.dir / "lib");
  row.expect("E383", row.build({"--check-load", "-L", row.dir / "lib", "-l", "m"}), 7, "load",
             {"undefined symbol: _Z10acc_launchi",
              "acc_launch(int) is defined by none of the libraries the link named (-lm, added by",
              "searched -L " + row.dir / "lib", "add the library that defines it",
              "nm -D --defined-only"});
}

TEST_CASE("E384 explain without a source", "[matrix]") {
  Row row;
  row.expect("E384", row.kbuild({"explain", "--no-torch"}), 2, "usage",
             {"explain needs a source", "kbuild explain [build options] SOURCE"});
}

TEST_CASE("E348 --inductor-line without --dry-run", "[matrix]") {
  Row row;
  row.expect("E348", row.build({"--inductor-line"}), 2, "usage", {"add --dry-run"});
}

TEST_CASE("E349 --version --json", "[matrix]") {
  Row row;
  row.expect("E349", row.build({"--version", "--json"}), 2, "usage",
             {"--version has no JSON form", "kbuild doctor --json"});
}

TEST_CASE("E350 kbuild cc with a kbuild option other than -v before --", "[matrix]") {
  Row row;
  row.expect("E350",
             row.kbuild({"cc", "--dry-run", "--", "g++", row.kernel, "-shared", "-fPIC", "-o",
                         row.output}),
             2, "usage", {"cc: '--dry-run' is not an option of kbuild cc"});
}
