// Smoke: the binary runs, answers --version/--help, and every shipped device
// file parses.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/device_file.hpp"

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
