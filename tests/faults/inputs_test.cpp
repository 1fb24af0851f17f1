// Inputs that are accepted but were mishandled: a compile database behind a
// symlink, paths that are not UTF-8 in JSON output, sources named like
// options. Real kbuild, real g++, real files.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

const std::string kKernel = "extern \"C\" int f() { return 1; }\n";

// Reads a JSON file with Python's surrogateescape convention and prints
// what `expression` (over `doc`) gives, as bytes in hex.
std::string python_bytes(const std::string& file, const std::string& expression) {
  RunResult r = run({"/usr/bin/python3", "-c",
                     "import json, os, sys\n"
                     "doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
                     "print(os.fsencode(" +
                         expression + ").hex())\n",
                     file});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, r.out.find('\n'));
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

}  // namespace

TEST_CASE("a compile_commands.json that is a symlink: its target is updated, the link kept",
          "[faults][inputs]") {
  TempDir home, dir;
  write_file(dir / "kernel.cpp", kKernel);
  fs::create_directories(dir / "build");
  write_file(dir / "build/compile_commands.json", "[]\n");
  fs::create_symlink("build/compile_commands.json", dir / "compile_commands.json");
  RunResult r = run_kbuild({"--no-torch", "--compile-commands", dir / "compile_commands.json",
                            dir / "kernel.cpp", "-o", dir / "k.so"},
                           home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_symlink(dir / "compile_commands.json"));
  auto db = nlohmann::json::parse(read_file(dir / "build/compile_commands.json"));
  REQUIRE(db.size() == 1);
  CHECK(db[0]["file"] == dir / "kernel.cpp");
}

TEST_CASE("a compile database's lock file planted as a symlink: its target is never created",
          "[faults][inputs]") {
  TempDir home, dir, elsewhere;
  write_file(dir / "kernel.cpp", kKernel);
  // Another user's link where kbuild takes its lock: following it would
  // create (and lock) a file of their choosing.
  fs::create_symlink(elsewhere / "victim", dir / "compile_commands.json.lock");
  RunResult r = run_kbuild({"--no-torch", "--dry-run", "--compile-commands",
                            dir / "compile_commands.json", dir / "kernel.cpp", "-o", dir / "k.so"},
                           home.str());
  INFO(r.err);
  CHECK_FALSE(fs::exists(elsewhere / "victim"));
  CHECK(fs::is_symlink(dir / "compile_commands.json.lock"));
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("compile_commands.json.lock") != std::string::npos);
}

TEST_CASE("paths that are not UTF-8: JSON written with \\udcXX escapes, the build done",
          "[faults][inputs]") {
  TempDir home, dir;
  const std::string weird = dir / "we\xff\xfeird.cpp";
  write_file(weird, kKernel);
  const std::string report = dir / "report.json", db = dir / "cc.json";
  RunResult r = run_kbuild(
      {"--no-torch", "--report", report, "--compile-commands", db, weird, "-o", dir / "k.so"},
      home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(dir / "k.so"));
  CHECK(read_file(report).find("\\udcff\\udcfe") != std::string::npos);
  CHECK(python_bytes(report, "doc['request']['sources'][0]") == hex(weird));
  CHECK(python_bytes(db, "doc[0]['file']") == hex(weird));
  // Again: the database written before is read back with the same bytes.
  r = run_kbuild({"--no-torch", "--compile-commands", db, weird, "-o", dir / "k.so"}, home.str());
  REQUIRE(r.exit_code == 0);
  CHECK(python_bytes(db, "doc[0]['file']") == hex(weird));
  CHECK(nlohmann::json::parse(read_file(db), nullptr, false).size() == 1);

  // devices --json names a device file whose path is not UTF-8.
  fs::create_directories(dir / "conf\xff");
  write_file(dir / "conf\xff/x.json", "{\"device\": \"x\"}");
  r = run_kbuild({"devices", "--json", "--no-torch", "--config", dir / "conf\xff/x.json"},
                 home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  write_file(dir / "devices.json", r.out);
  CHECK(python_bytes(dir / "devices.json", "[d for d in doc if d['name'] == 'x'][0]['source']") ==
        hex(dir / "conf\xff/x.json"));
}

TEST_CASE("sources named like options reach g++ as files", "[faults][inputs]") {
  TempDir home, dir;
  write_file(dir / "-rf.cpp", kKernel);
  RunResult r = run({"/usr/bin/env", "-C", dir.str(), kbuild_binary(), "--no-torch", "-o", "k.so",
                     "--", "-rf.cpp"},
                    {{"HOME", home.str()}, {"XDG_CACHE_HOME", home / "cache"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir / "-rf.cpp"));
  CHECK(fs::exists(dir / "k.so"));
}
