// What doctor, reports and --version say about an active plugin: one line,
// and the warnings (a source checkout shadowing the package, mixed lines).
#include "devices/plugin.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

PluginStatus npu() {
  PluginStatus s;
  s.plugin = "npu";
  s.package = "torch_npu";
  s.installed = "2.11.0.post1";
  s.release = "2.11.0.post1";
  s.backend = "triton";
  s.backend_from = "default";
  s.patches_device = true;
  return s;
}

DeviceFile with_package() {
  return parse_device_file(R"({"device": "acc",
    "package": {"name": "torch_acc", "root": "/x", "library": "lib/libtorch_acc.so",
                "source_checkout_mark": "../setup.py"}})",
                           "/cfg/acc.json");
}

}  // namespace

TEST_CASE("describe: package and version, release, backend, patch and toolkit",
          "[unit][plugin_status]") {
  PluginStatus s = npu();
  CHECK(describe(s) == "torch_npu 2.11.0.post1, backend triton (default), device options patched");
  s.installed = "2.11.0.post5";
  s.backend_from = "--backend";
  s.patches_device = false;
  s.patch_off_by = "DISABLE_AOTI_PATCH=1";
  s.toolkit = "CANN";
  CHECK(describe(s) ==
        "torch_npu 2.11.0.post5 (reproduced as 2.11.0.post1), backend triton (from --backend), "
        "device options not patched (DISABLE_AOTI_PATCH=1), CANN unknown");
  s.package.clear();
  s.installed.clear();
  s.patch_off_by.clear();
  s.toolkit_version = "8.0.RC1";
  CHECK(describe(s) ==
        "plugin npu (version unknown) (reproduced as 2.11.0.post1), backend triton (from "
        "--backend), Inductor's own device options, CANN 8.0.RC1");
}

TEST_CASE("warnings: torch and the package from different release lines", "[unit][plugin_status]") {
  PluginStatus s = npu();
  s.package = "torch_acc";
  s.torch_version = "2.11.0+cpu";
  CHECK(plugin_warnings(s, with_package()).empty());
  s.torch_version = "2.10.1";
  auto warnings = plugin_warnings(s, with_package());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "torch 2.10.1 and torch_acc 2.11.0.post1 come from different lines (torch 2.10; "
        "torch_acc for torch 2.11): install the torch_acc release of torch's line, or the torch "
        "it is made for");
  s.installed.clear();  // unknown: nothing to compare
  CHECK(plugin_warnings(s, with_package()).empty());
}

TEST_CASE("warnings: the torch lines of the release reproduced decide, not its version",
          "[unit][plugin_status]") {
  PluginStatus s = npu();
  s.package = "torch_npu";
  s.installed = "2.13.0+git9e73e70";
  s.release = "master";
  s.release_from = "KBUILD_TORCH_NPU_RELEASE";
  s.torch_lines = {"2.13", "2.14", "2.15"};
  s.torch_version = "2.14.1";
  CHECK(plugin_warnings(s, with_package()).empty());
  s.torch_version = "2.11.0+cu130";  // the measured machine's torch
  auto warnings = plugin_warnings(s, with_package());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] ==
        "torch 2.11.0+cu130 and torch_npu 2.13.0+git9e73e70 (release master) come from "
        "different lines (torch 2.11; torch_npu for torch 2.13, 2.14, 2.15): install the "
        "torch_npu release of torch's line, or the torch it is made for");
}

TEST_CASE("describe: the release's backends, its torch lines and the switches it honours",
          "[unit][plugin_status]") {
  PluginStatus s = npu();
  s.installed = "2.12.0";
  s.release = "2.12.0";
  s.backends = {"triton", "mlir"};
  s.torch_lines = {"2.12"};
  s.honoured = {{"DISABLE_AOTI_PATCH", true}};
  CHECK(describe(s) ==
        "torch_npu 2.12.0, backend triton (default), device options patched; backends of release "
        "2.12.0 (for torch 2.12): triton, mlir; DISABLE_AOTI_PATCH honoured");
  s.release = "master";
  s.release_from = "KBUILD_TORCH_NPU_RELEASE";
  s.backends = {"triton", "mlir", "dvm", "ascendc", "triton_experimental"};
  s.torch_lines = {"2.13", "2.14", "2.15"};
  s.honoured = {{"DISABLE_AOTI_PATCH", false}};
  CHECK(describe(s) ==
        "torch_npu 2.12.0 (reproduced as master, named by KBUILD_TORCH_NPU_RELEASE), backend "
        "triton (default), device options patched; backends of release master (for torch 2.13, "
        "2.14, 2.15): triton, mlir, dvm, ascendc, triton_experimental; DISABLE_AOTI_PATCH "
        "ignored (the device-options patch is unconditional)");
}

TEST_CASE("warnings: a source checkout (the mark, no library) shadows the package",
          "[unit][plugin_status]") {
  TempDir tmp;
  fs::create_directories(tmp / "repo/torch_acc");
  write_file(tmp / "repo/setup.py", "");
  PluginStatus s = npu();
  s.installed.clear();
  s.package_root = tmp / "repo/torch_acc";
  auto warnings = plugin_warnings(s, with_package());
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("torch_acc at " + tmp / "repo/torch_acc" +
                                            " is a source checkout (no lib/libtorch_acc.so"));
  write_file(tmp / "repo/torch_acc/lib/libtorch_acc.so", "");  // built in place: installed
  CHECK(plugin_warnings(s, with_package()).empty());
}

TEST_CASE("describe: a package that is not found is 'not installed', not 'version unknown'",
          "[unit][plugin_status]") {
  PluginStatus s = npu();
  s.package_root.clear();
  s.installed.clear();
  CHECK(describe(s).rfind("torch_npu not installed (a build reproduces 2.11.0.post1), backend "
                          "triton (default)",
                          0) == 0);
  s.package_root = "/site/torch_npu";  // found, without a version file
  CHECK(describe(s).rfind("torch_npu (version unknown) (reproduced as 2.11.0.post1)", 0) == 0);
}
