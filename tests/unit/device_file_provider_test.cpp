// make_provider: the provider a device file describes.
#include "devices/device_file_load.hpp"

#include <catch2/catch.hpp>

#include "devices/device_file.hpp"

using namespace kbuild;

TEST_CASE("a file with exec gets an exec provider, any other a list provider",
          "[unit][device_file_provider]") {
  auto exec = make_provider(
      parse_device_file(R"({"device": "acc", "exec": {"command": ["./p.sh"]}})", "/cfg/acc.json"));
  CHECK(exec->kind() == "exec");
  CHECK(exec->source() == "/cfg/acc.json");
  auto lists = make_provider(
      parse_device_file(R"({"device": "acc", "definitions": ["A"]})", "/cfg/acc.json"));
  CHECK(lists->kind() == "device file");
  CHECK(lists->source() == "/cfg/acc.json");
  REQUIRE(lists->device_file());
  CHECK(lists->device_file()->device == "acc");
}
