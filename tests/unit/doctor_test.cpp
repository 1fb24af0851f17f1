// doctor's verdict: the worst check, and the summary line under the table.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "driver/doctor.hpp"

using namespace kbuild;
using kbuild_test::TempDir;

namespace {

DoctorCheck check(CheckStatus status) {
  return DoctorCheck{"c", status, "", ""};
}

}  // namespace

TEST_CASE("worst: fail over warn over ok; ok when there are none", "[unit][doctor]") {
  CHECK(worst({}) == CheckStatus::ok);
  CHECK(worst({check(CheckStatus::ok), check(CheckStatus::warn)}) == CheckStatus::warn);
  CHECK(worst({check(CheckStatus::fail), check(CheckStatus::warn)}) == CheckStatus::fail);
  CHECK(std::string(status_name(CheckStatus::warn)) == "warn");
}

TEST_CASE("the summary counts each status and says what it means", "[unit][doctor]") {
  CHECK(doctor_summary({check(CheckStatus::ok), check(CheckStatus::ok)}) ==
        "summary: 2 checks: 2 ok, 0 warnings, 0 failures; ready to build");
  CHECK(doctor_summary({check(CheckStatus::ok), check(CheckStatus::warn)}) ==
        "summary: 2 checks: 1 ok, 1 warnings, 0 failures; builds may work: see the hints above");
  CHECK(doctor_summary(
            {check(CheckStatus::fail), check(CheckStatus::warn), check(CheckStatus::fail)}) ==
        "summary: 3 checks: 0 ok, 1 warnings, 2 failures; fix the failures above before building");
}

namespace {

Environment env_with_data_dir(const std::string& data_dir) {
  Environment env = Environment::from_process();
  env.set("KBUILD_DATA_DIR", data_dir);
  env.unset("KBUILD_CONFIG_PATH");
  return env;
}

}  // namespace

TEST_CASE("version_details: where device files come from and the profile in use",
          "[version_details]") {
  const std::string configs = std::string(std::getenv("KBUILD_SOURCE_ROOT")) + "/configs";
  TempDir tmp;
  kbuild_test::write_file(tmp / "torch/version.py", "__version__ = '2.6.0+cpu'\n");
  Environment env = env_with_data_dir(configs);
  env.set("KBUILD_TORCH_ROOT", tmp / "torch");
  const std::string text = version_details(env);
  CHECK(text.rfind("device files are read from:\n  " + configs + "/devices\n", 0) == 0);
  CHECK(text.find("\n  then each --device-file FILE\n") != std::string::npos);
  CHECK(text.find("\nInductor profile 2.6 (" + configs + "/profiles/2.6.json; torch 2.6.0") !=
        std::string::npos);
}

TEST_CASE("version_details never throws: what it cannot find is 'unknown'", "[version_details]") {
  TempDir tmp;
  kbuild_test::write_file(tmp / "devices/bad.json", "{not json");
  Environment env = env_with_data_dir(tmp.str());
  env.set("KBUILD_TORCH_ROOT", tmp / "no-such-torch");
  std::string text;
  REQUIRE_NOTHROW(text = version_details(env));
  CHECK(text.find("\nInductor profile: unknown (") != std::string::npos);
  CHECK(text.find("\nplugins: unknown (") != std::string::npos);
}

TEST_CASE("version_details: a plugin whose package is not installed says so", "[version_details]") {
  const std::string configs = std::string(std::getenv("KBUILD_SOURCE_ROOT")) + "/configs";
  TempDir tmp;
  Environment env = env_with_data_dir(configs);
  kbuild_test::write_file(tmp / "torch/version.py", "__version__ = '2.11.0+cpu'\n");
  env.set("KBUILD_TORCH_ROOT", tmp / "torch");  // a torch, and no torch_npu beside it
  env.unset("KBUILD_TORCH_NPU_ROOT");
  const std::string text = version_details(env);
  INFO(text);
  CHECK(text.find("\nplugin npu: torch_npu not installed (") != std::string::npos);
  CHECK(text.find("version unknown") == std::string::npos);
}
