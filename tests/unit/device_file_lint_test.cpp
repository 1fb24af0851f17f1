#include "devices/device_file_load.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

TEST_CASE("cflags and ldflags entries with a leading '-' are warned about, with file:line",
          "[device_file_lint]") {
  DeviceFile f = parse_device_file(R"({
  "device": "acc",
  "cflags": ["O2", "-funroll-loops"],
  "ldflags": ["--as-needed"],
  "passthrough_args": ["-fopenmp"],
  "when": [{"aot_mode": true, "cflags": ["-g"]}],
  "layers": {"base": {"cflags": ["-Wextra"]}},
  "backends": {"fast": {"extends": ["base"], "ldflags": ["s"]}}
})",
                                   "/cfg/acc.json");
  std::vector<std::string> warnings = device_file_warnings(f);
  REQUIRE(warnings.size() == 4);
  CHECK(warnings[0].rfind("/cfg/acc.json:3: cflags entry \"-funroll-loops\"", 0) == 0);
  CHECK(warnings[0].find("write \"funroll-loops\"") != std::string::npos);
  CHECK(warnings[1].rfind("/cfg/acc.json:4: ldflags entry \"--as-needed\"", 0) == 0);
  CHECK(warnings[1].find("write \"as-needed\"") != std::string::npos);
  CHECK(warnings[2].rfind("/cfg/acc.json:6: cflags entry \"-g\"", 0) == 0);
  CHECK(warnings[3].rfind("/cfg/acc.json:7: cflags entry \"-Wextra\"", 0) == 0);
}

TEST_CASE("entries Inductor takes as written (passthrough, definitions) are not warned about",
          "[device_file_lint]") {
  DeviceFile f = parse_device_file(
      R"({"device": "acc", "passthrough_args": ["-fopenmp"], "definitions": ["-X"]})",
      "/cfg/acc.json");
  CHECK(device_file_warnings(f).empty());
}

TEST_CASE("libraries, include and library dirs written with their -l, -I, -L are warned about",
          "[device_file_lint]") {
  DeviceFile f = parse_device_file(R"({
  "device": "acc",
  "libraries": ["acc_rt", "-lfoo"],
  "include_dirs": ["-I/opt/acc/include"],
  "libraries_dirs": ["/opt/acc/lib", "-L/opt/acc/lib64"],
  "layers": {"base": {"libraries": ["-lbar"]}},
  "backends": {"fast": {"extends": ["base"]}}
})",
                                   "/cfg/acc.json");
  std::vector<std::string> warnings = device_file_warnings(f);
  REQUIRE(warnings.size() == 4);
  CHECK(warnings[0].rfind("/cfg/acc.json:4: include_dirs entry \"-I/opt/acc/include\"", 0) == 0);
  CHECK(warnings[0].find("gets \"-I-I/opt/acc/include\"; write \"/opt/acc/include\"") !=
        std::string::npos);
  CHECK(warnings[1].rfind("/cfg/acc.json:5: libraries_dirs entry \"-L/opt/acc/lib64\"", 0) == 0);
  CHECK(warnings[1].find("write \"/opt/acc/lib64\"") != std::string::npos);
  CHECK(warnings[2].rfind("/cfg/acc.json:3: libraries entry \"-lfoo\"", 0) == 0);
  CHECK(warnings[2].find("gets \"-l-lfoo\"; write \"foo\"") != std::string::npos);
  CHECK(warnings[3].rfind("/cfg/acc.json:6: libraries entry \"-lbar\"", 0) == 0);
}

TEST_CASE("\"mode\": \"extend\" is warned about on a device that is not built in, with file:line",
          "[device_file_lint]") {
  DeviceFile acc =
      parse_device_file("{\"device\": \"acc\",\n \"mode\": \"extend\"}", "/cfg/a.json");
  std::vector<std::string> warnings = device_file_warnings(acc);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("/cfg/a.json:2: \"mode\": \"extend\" on device 'acc', which is not built "
                          "in",
                          0) == 0);
  CHECK(warnings[0].find("drop \"mode\", or extend a built-in device (cpu, cuda, xpu, mps)") !=
        std::string::npos);
  DeviceFile cuda =
      parse_device_file(R"({"device": "cuda", "mode": "extend", "libraries": ["cublas"]})", "c");
  CHECK(device_file_warnings(cuda).empty());
  DeviceFile replaced = parse_device_file(R"({"device": "acc", "mode": "replace"})", "r");
  CHECK(device_file_warnings(replaced).empty());
}
