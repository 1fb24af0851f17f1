// Smoke: the binary runs, answers --version/--help, and every shipped device
// file parses.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"

using namespace kbuild_test;

TEST_CASE("kbuild --version and --help run and exit 0", "[smoke]") {
  TempDir home;
  RunResult v = run_kbuild({"--version"}, home.str());
  CHECK(v.exit_code == 0);
  CHECK(v.out.rfind("kbuild ", 0) == 0);
  RunResult h = run_kbuild({"--help"}, home.str());
  CHECK(h.exit_code == 0);
  for (const char* word :
       {"--device", "--dry-run", "--aot", "--compile-only", "options", "devices"})
    CHECK(h.out.find(word) != std::string::npos);
  // --help names an option's value as the man page does.
  CHECK(h.out.find("--plugin DEVICE") != std::string::npos);
}

TEST_CASE("every shipped device file parses and names a valid device", "[smoke]") {
  int files = 0;
  for (auto& entry : fs::directory_iterator(source_root() + "/configs/devices")) {
    if (entry.path().extension() != ".json") continue;
    kbuild::DeviceFile f = kbuild::load_device_file(entry.path());
    CHECK(kbuild::is_valid_device_name(f.device));
    CHECK(entry.path().stem() == f.device);
    ++files;
  }
  CHECK(files >= 1);
}

TEST_CASE("kbuild devices lists the four built-ins and npu", "[smoke]") {
  TempDir home;
  RunResult r = run_kbuild({"devices"}, home.str());
  REQUIRE(r.exit_code == 0);
  for (const char* d : {"cpu\t", "cuda\t", "xpu\t", "mps\t", "npu\t"})
    CHECK(r.out.find(d) != std::string::npos);
}

TEST_CASE("every spelling of an option is understood: =value, attached, combined, after --",
          "[smoke]") {
  // kbuild registers only the options a command line names (start-up time);
  // each spelling must still reach its option.
  TempDir home, dir;
  write_file(dir / "k.cpp", "int x;\n");
  auto dry = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--no-torch", "--dry-run"});
    return run_kbuild(args, home.str());
  };
  RunResult equals = dry({"--device=cuda", "--cuda-home=/opt/cu", dir / "k.cpp"});
  INFO(equals.err);
  REQUIRE(equals.exit_code == 0);
  CHECK(equals.out.find("-I/opt/cu/include") != std::string::npos);
  RunResult attached = dry({"-DFAST=1", "-I/inc", "-o" + dir / "out.so", dir / "k.cpp"});
  REQUIRE(attached.exit_code == 0);
  CHECK(attached.out.find(" -D FAST=1 ") != std::string::npos);  // rendered as Inductor does
  CHECK(attached.out.find(" -I/inc") != std::string::npos);
  CHECK(attached.out.find(" -o " + dir / "out.so") != std::string::npos);
  RunResult combined = dry({"-qc", dir / "k.cpp"});  // quiet + compile-only
  REQUIRE(combined.exit_code == 0);
  CHECK(combined.out.find(" -c ") != std::string::npos);
  CHECK(combined.err.empty());
  // After "--" a word that looks like an option is a source.
  write_file(dir / "-odd.cpp", "int y;\n");
  RunResult dashed = run({"/bin/sh", "-c", "cd \"$1\" && \"$2\" --no-torch --dry-run -- -odd.cpp",
                          "sh", dir.str(), kbuild_binary()},
                         {{"HOME", home.str()}});
  INFO(dashed.err);
  CHECK(dashed.exit_code == 0);
  // ... and reaches g++ as a file, never as "-o dd.cpp".
  CHECK(dashed.out.find("g++ ./-odd.cpp ") == 0);
  // A misspelt option is reported as CLI11 reports it with every option known.
  RunResult typo = dry({"--devcie", "npu", dir / "k.cpp"});
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.find("--devcie") != std::string::npos);
}

TEST_CASE("a daemon a test starts is recorded, and scripts/check-daemons blames it until it ends",
          "[smoke]") {
  TempDir tmp;
  const std::string dir = tmp / "daemons";
  const char* suite_dir = std::getenv("KBUILD_TEST_DAEMONS_DIR");
  const std::optional<std::string> saved =
      suite_dir ? std::optional<std::string>(suite_dir) : std::nullopt;
  ::setenv("KBUILD_TEST_DAEMONS_DIR", dir.c_str(), 1);
  const std::vector<std::string> check{"/bin/sh", source_root() + "/scripts/check-daemons", "check",
                                       tmp / "daemons.json", dir};
  {
    BackgroundProcess daemon({"/bin/sleep", "60"});
    REQUIRE(fs::is_directory(dir));
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
    RunResult blamed = run(check);
    CHECK(blamed.exit_code == 1);
    CHECK(blamed.err.find("/bin/sleep 60") != std::string::npos);
    CHECK(read_file(tmp / "daemons.json").find("\"FAIL\"") != std::string::npos);
  }
  RunResult ended = run(check);
  INFO(ended.err);
  CHECK(ended.exit_code == 0);
  if (saved)
    ::setenv("KBUILD_TEST_DAEMONS_DIR", saved->c_str(), 1);
  else
    ::unsetenv("KBUILD_TEST_DAEMONS_DIR");
}
