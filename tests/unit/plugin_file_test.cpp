// The package and plugin sections of a device file: read and validated at
// load time, with file:line and key path; release version numbers.
#include "devices/device_file.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;

namespace {

const std::string kAccFile = kbuild_test::acc_device_file();

std::string plugin_error(const std::string& text) {
  try {
    parse_device_file(text, "/cfg/acc.json");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::config);
    return e.what();
  }
  FAIL("expected a config error");
  return "";
}

// kAccFile with `from` replaced by `to` (once).
std::string acc_with(const std::string& from, const std::string& to) {
  std::string text = kAccFile;
  auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("package and plugin sections load with their backends, edits and releases",
          "[unit][plugin_file]") {
  DeviceFile f = parse_device_file(kAccFile, "/cfg/acc.json");
  REQUIRE(f.package);
  CHECK(f.package->name == "torch_acc");
  CHECK(f.package->version_file == "version.py");
  REQUIRE(f.plugin);
  CHECK(f.plugin->backend_env == "ACC_BACKEND");
  CHECK(f.plugin->default_backend == "fast");  // the file's default_backend
  const PluginBackend& fast = f.plugin->backends.at("fast");
  REQUIRE(fast.base.size() == 2);
  CHECK(fast.base[0].value == "march=native");
  CHECK_FALSE(fast.base[0].replacement);
  CHECK(fast.base[1].replacement == std::optional<std::string>("O2"));
  CHECK(fast.base[0].line == 13);
  CHECK(fast.patches_device);
  CHECK(fast.unless_env.at("ACC_NO_PATCH") == "1");
  CHECK_FALSE(f.plugin->backends.at("plain").patches_device);
  CHECK(f.plugin->releases.size() == 3);
}

TEST_CASE("plugin sections are validated at load: file:line and key path", "[unit][plugin_file]") {
  CHECK_THAT(plugin_error(acc_with("\"note\": \"patches nothing\"", "\"notes\": \"x\"")),
             Catch::Contains("/cfg/acc.json:") &&
                 Catch::Contains("at /plugin/backends/plain/notes: unknown key 'notes'"));
  CHECK_THAT(plugin_error(acc_with("\"drop\": \"march=native\"",
                                   "\"drop\": \"march=native\", \"replace\": \"x\"")),
             Catch::Contains("at /plugin/backends/fast/base/0: give exactly one of 'drop'"));
  CHECK_THAT(
      plugin_error(acc_with("\"list\": \"cflags\", \"drop\"", "\"list\": \"flags\", \"drop\"")),
      Catch::Contains("at /plugin/backends/fast/base/0/list: 'flags' is not one of the 7"));
  CHECK_THAT(
      plugin_error(acc_with("\"plain\": {\"note\"", "\"slow\": {\"note\"")),
      Catch::Contains("at /backends/plain: backend 'plain' has no state in /plugin/backends"));
  CHECK_THAT(plugin_error(acc_with("\"backends\": {\"fast\": {}, \"plain\": {}}",
                                   "\"backends\": {\"fast\": {}}")),
             Catch::Contains("at /plugin/backends/plain: plugin backend 'plain' is not one of the "
                             "device's backends"));
  CHECK_THAT(plugin_error(acc_with("\"notes\": {\"plain\"", "\"notes\": {\"nope\"")),
             Catch::Contains("/notes/nope: 'nope' is not one of the plugin's backends"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"two\": {}")),
             Catch::Contains("at /plugin/releases/two: 'two' is not a release version"));
  CHECK_THAT(plugin_error(acc_with("\"ACC_NO_PATCH\"", "\"ACC NO\"")),
             Catch::Contains("'ACC NO' is not an environment variable name"));
  CHECK_THAT(
      plugin_error(acc_with("\"/acc/every\"", "\"${nope}\"")),
      Catch::Contains("at /plugin/backends/fast/device_options/every_device/include_dirs/0"));
  CHECK_THAT(plugin_error(acc_with("\"package\"", "\"pkg\"")),
             Catch::Contains("unknown key 'pkg'"));
  std::string no_package = kAccFile;
  no_package.erase(no_package.find("\"package\""),
                   no_package.find("\"plugin\"") - no_package.find("\"package\""));
  CHECK_THAT(plugin_error(no_package),
             Catch::Contains("at /plugin/releases: releases are chosen by the package's version"));
}

TEST_CASE("a release's backends, torch lines, switches and named versions are checked at load",
          "[unit][plugin_file]") {
  DeviceFile f =
      parse_device_file(acc_with("\"2.0.0\": {}",
                                 "\"2.0.0\": {\"backends\": [\"fast\"], \"torch\": [\"2.1\"], "
                                 "\"unless_env\": {\"fast\": {}}, \"source\": \"tag v2\"}, "
                                 "\"main\": {\"versions\": [\"3.0.0\"]}"),
                        "/cfg/acc.json");
  REQUIRE(f.plugin->releases.size() == 4);
  const PluginRelease& two = f.plugin->releases[2];
  CHECK(two.backends == std::optional<std::vector<std::string>>({"fast"}));
  CHECK(two.torch_lines == std::vector<std::string>{"2.1"});
  CHECK(two.unless_env.at("fast").empty());
  CHECK(two.source == "tag v2");
  CHECK_FALSE(f.plugin->releases[0].backends);  // none given: all of the plugin's
  CHECK(f.plugin->releases[3].named);
  CHECK(f.plugin->releases[3].torch_lines == std::vector<std::string>{"3.0"});

  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"backends\": [\"slow\"]}")),
             Catch::Contains("at /plugin/releases/2.0.0/backends/0: 'slow' is not one of the "
                             "plugin's backends (fast, plain)"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"backends\": [\"plain\"]}")),
             Catch::Contains("at /plugin/releases/2.0.0/backends: the plugin's default backend "
                             "'fast' is not among them"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"torch\": [\"2.x\"]}")),
             Catch::Contains("at /plugin/releases/2.0.0/torch/0: '2.x' is not a torch line"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"unless_env\": {\"slow\": {}}}")),
             Catch::Contains("at /plugin/releases/2.0.0/unless_env/slow: 'slow' is not one of"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"versions\": []}")),
             Catch::Contains("only a named release (such as master) has 'versions'"));
  CHECK_THAT(
      plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {}, \"main\": {\"versions\": [\"x\"]}")),
      Catch::Contains("at /plugin/releases/main/versions/0: 'x' is not a release version"));
  CHECK_THAT(plugin_error(
                 acc_with("\"2.0.0\": {}", "\"2.0.0\": {}, \"main\": {\"versions\": [\"2.0.0\"]}")),
             Catch::Contains("version 2.0.0 already names release 2.0.0"));
  CHECK_THAT(plugin_error(acc_with("\"backend_env\"", "\"release_env\": \"A B\", \"backend_env\"")),
             Catch::Contains("at /plugin/release_env: 'A B' is not an environment variable name"));
}

TEST_CASE("release versions: the leading numbers, and the line of three", "[unit][plugin_file]") {
  CHECK(parse_release_version("2.11.0+cu130") == std::vector<long>{2, 11, 0});
  CHECK_FALSE(parse_release_version("post"));
  CHECK(release_line("2.11.0.post1") == "2.11.0");
  CHECK(release_line("2.11.0+cu130") == "2.11.0");
}
