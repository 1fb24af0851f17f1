#include "diagnose/doctor.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;

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
