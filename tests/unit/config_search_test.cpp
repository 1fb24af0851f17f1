#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file_load.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {
std::string device_json(const std::string& name, const std::string& lib) {
  return "{\"device\": \"" + name + "\", \"libraries\": [\"" + lib + "\"]}";
}
std::string lib_of(const Registry& r, const std::string& device) {
  Paths paths;
  Environment env;
  auto got = r.resolve(DeviceQuery{device}, ResolveContext{paths, env}, false);
  auto libs = got.options.values(OptionList::libraries);
  return libs.empty() ? "" : libs[0];
}
}  // namespace

TEST_CASE("config sources are searched in the documented order", "[unit][config]") {
  Environment env;
  env.set("HOME", "/home/u");
  env.set("KBUILD_CONFIG_PATH", "/a:/b");
  auto sources = device_file_sources("/usr/share/kbuild", env, {"/x.json"});
  std::vector<std::string> paths;
  for (const auto& s : sources) paths.push_back(s.path);
  CHECK(paths == std::vector<std::string>{"/usr/share/kbuild/devices", "/etc/kbuild/devices.d",
                                          "/home/u/.config/kbuild/devices.d", "/a", "/b",
                                          "/x.json"});
  env.set("XDG_CONFIG_HOME", "/xdg");
  CHECK(device_file_sources("", env, {})[1].path == "/xdg/kbuild/devices.d");
}

TEST_CASE("later registrations win, with one warning naming both files", "[unit][config]") {
  TempDir dir;
  write_file(dir / "data/devices/npu.json", device_json("npu", "from_data"));
  write_file(dir / "user/b.json", device_json("npu", "from_user"));
  write_file(dir / "user/a.json", device_json("other", "x"));
  write_file(dir / "user/notes.txt", "not a device file");
  write_file(dir / "cli.json", device_json("npu", "from_cli"));
  Environment env;
  env.set("KBUILD_CONFIG_PATH", dir / "user");
  Registry registry;
  LoadedDeviceFiles loaded =
      register_device_files(device_file_sources(dir / "data", env, {dir / "cli.json"}), registry);
  CHECK(loaded.files == std::vector<std::string>{dir / "data/devices/npu.json", dir / "user/a.json",
                                                 dir / "user/b.json", dir / "cli.json"});
  CHECK(lib_of(registry, "npu") == "from_cli");
  REQUIRE(registry.warnings().size() == 2);
  CHECK(registry.warnings()[0].find(dir / "data/devices/npu.json") != std::string::npos);
  CHECK(registry.warnings()[0].find(dir / "user/b.json") != std::string::npos);
}

TEST_CASE("a broken device file anywhere is a config error, never skipped", "[unit][config]") {
  TempDir dir;
  write_file(dir / "user/bad.json", "{\"device\": \"x\", \"libraries\": [1]}");
  Environment env;
  env.set("KBUILD_CONFIG_PATH", dir / "user");
  Registry registry;
  CHECK_THROWS_WITH(register_device_files(device_file_sources("", env, {}), registry),
                    Catch::Contains(dir / "user/bad.json"));
}

TEST_CASE("missing --config files are errors; missing KBUILD_CONFIG_PATH dirs are warnings",
          "[unit][config]") {
  TempDir dir;
  Environment env;
  env.set("KBUILD_CONFIG_PATH", dir / "nope");
  Registry registry;
  CHECK(register_device_files(device_file_sources("", env, {}), registry).warnings.size() == 1);
  CHECK_THROWS_WITH(register_device_files(
                        device_file_sources("", Environment{}, {dir / "missing.json"}), registry),
                    Catch::Contains("no such file"));
  fs::create_directories(dir / "adir");
  CHECK_THROWS_WITH(
      register_device_files(device_file_sources("", Environment{}, {dir / "adir"}), registry),
      Catch::Contains("a directory, and --device-file takes one file"));
}
