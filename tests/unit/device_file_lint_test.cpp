#include "devices/device_file_lint.hpp"

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
