#include <catch2/catch.hpp>

#include "devices/device_file.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;

namespace {
std::string config_error(const std::string& text) {
  try {
    parse_device_file(text, "/cfg/dev.json");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::config);
    return e.what();
  }
  FAIL("expected a config error for: " << text);
  return "";
}
}  // namespace

TEST_CASE("a valid device file gives its lists, conditions and entry lines",
          "[unit][device-file]") {
  DeviceFile f = parse_device_file(R"({
  "device": "npu",
  "description": "test",
  "env_help": {"ASCEND_HOME_PATH": "run set_env.sh"},
  "definitions": ["USE_NPU"],
  "include_dirs": [
    "${env:ASCEND_HOME_PATH}/include"
  ],
  "when": [{"aot_mode": true, "libraries": ["aot_only"]}]
})",
                                   "/cfg/npu.json");
  CHECK(f.device == "npu");
  CHECK(f.mode == RegistrationMode::replace);
  CHECK(f.env_help.at("ASCEND_HOME_PATH") == "run set_env.sh");
  const auto& inc = f.lists.lists[static_cast<std::size_t>(OptionList::include_dirs)];
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].line == 7);
  CHECK(inc[0].pointer == "/include_dirs/0");
  REQUIRE(f.when.size() == 1);
  CHECK(f.when[0].applies(DeviceQuery{"npu", true, false}));
  CHECK_FALSE(f.when[0].applies(DeviceQuery{"npu", false, false}));
}

TEST_CASE("malformed JSON names file, line and column", "[unit][device-file]") {
  std::string msg = config_error("{\n  \"device\": \"x\",\n  \"libraries\": [\"a\",]\n}");
  CHECK(msg.find("/cfg/dev.json:3:") == 0);
  CHECK(msg.find("malformed JSON") != std::string::npos);
}

TEST_CASE("unknown keys are errors with the key path and its position", "[unit][device-file]") {
  std::string msg = config_error("{\"device\": \"x\",\n \"librarys\": []}");
  CHECK(msg.find("/cfg/dev.json:2:") == 0);
  CHECK(msg.find("at /librarys") != std::string::npos);
  CHECK(msg.find("unknown key 'librarys'") != std::string::npos);
  CHECK(msg.find("libraries") != std::string::npos);  // the known keys are listed
  CHECK(config_error("{\"device\": \"x\", \"when\": [{\"aot_mode\": true, \"libs\": []}]}")
            .find("at /when/0/libs") != std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"exec\": {\"command\": [\"p\"], \"timeout\": 1}}")
            .find("at /exec/timeout") != std::string::npos);
}

TEST_CASE("wrong types are errors naming the expected type", "[unit][device-file]") {
  CHECK(config_error("{\"device\": \"x\", \"libraries\": \"ascendcl\"}")
            .find("at /libraries: expected an array of strings, got a string") !=
        std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"libraries\": [\"a\", 3]}")
            .find("at /libraries/1: expected a string, got a number") != std::string::npos);
  CHECK(config_error("{\"device\": 7}").find("at /device: expected a string") != std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"when\": [{\"aot_mode\": \"yes\"}]}")
            .find("expected true or false") != std::string::npos);
  CHECK(config_error("[1]").find("must be a JSON object") != std::string::npos);
}

TEST_CASE("semantic errors: names, modes, conditions, exec with lists, bad ${}",
          "[unit][device-file]") {
  CHECK(config_error("{}").find("missing required key 'device'") != std::string::npos);
  CHECK(config_error("{\"device\": \"\"}").find("invalid device name") != std::string::npos);
  CHECK(config_error("{\"device\": \"../x\"}").find("invalid device name") != std::string::npos);
  CHECK(config_error("{\"device\": \"a/b\"}").find("invalid device name") != std::string::npos);
  CHECK(
      config_error("{\"device\": \"x\", \"mode\": \"merge\"}").find("\"replace\" or \"extend\"") !=
      std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"when\": [{\"libraries\": []}]}")
            .find("needs a condition") != std::string::npos);
  CHECK(
      config_error("{\"device\": \"x\", \"libraries\": [\"a\"], \"exec\": {\"command\": [\"p\"]}}")
          .find("either 'exec' or option lists") != std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"exec\": {\"command\": []}}").find("non-empty array") !=
        std::string::npos);
  std::string bad_var =
      config_error("{\"device\": \"x\",\n\"include_dirs\": [\"${ascend_home}/inc\"]}");
  CHECK(bad_var.find("/cfg/dev.json:2:") == 0);
  CHECK(bad_var.find("unknown variable '${ascend_home}'") != std::string::npos);
}

TEST_CASE("duplicate keys are errors, never silently the last one", "[unit][device-file]") {
  std::string msg =
      config_error("{\"device\": \"x\",\n \"libraries\": [\"a\"],\n \"libraries\": [\"b\"]}");
  CHECK(msg.find("duplicate key '/libraries'") != std::string::npos);
  CHECK(msg.find("/cfg/dev.json:3:") == 0);
}

TEST_CASE("device names accept the documented alphabet only", "[unit][device-file]") {
  CHECK(is_valid_device_name("npu"));
  CHECK(is_valid_device_name("my_dev-2"));
  CHECK_FALSE(is_valid_device_name("NPU"));
  CHECK_FALSE(is_valid_device_name("2npu"));
  CHECK_FALSE(is_valid_device_name(".."));
  CHECK_FALSE(is_valid_device_name(std::string(65, 'a')));
}

TEST_CASE("load_device_file reports unreadable files as config errors", "[unit][device-file]") {
  CHECK_THROWS_MATCHES(load_device_file("/nonexistent/kbuild/x.json"), Error,
                       Catch::Predicate<Error>([](const Error& e) {
                         return e.kind() == ErrorKind::config &&
                                std::string(e.what()).find("/nonexistent/kbuild/x.json") !=
                                    std::string::npos;
                       }));
}

TEST_CASE("exec.timeout_s outside (0, 3600] is refused, however it is spelt",
          "[unit][device-file]") {
  for (const char* bad : {"0", "-1", "3601", "1e300", "1e400", "-1e400", "true", "\"30\""}) {
    INFO(bad);
    std::string text = std::string("{\"device\": \"x\", \"exec\": {\"command\": [\"p\"], ") +
                       "\"timeout_s\": " + bad + "}}";
    CHECK_THROWS_AS(parse_device_file(text, "t.json"), Error);
  }
  std::string ok = "{\"device\": \"x\", \"exec\": {\"command\": [\"p\"], \"timeout_s\": 3600}}";
  CHECK(parse_device_file(ok, "t.json").exec->timeout_s == 3600);
}

TEST_CASE("remote_cache: a device's default remote cache address, checked when loaded",
          "[unit][device-file]") {
  DeviceFile f = parse_device_file(
      R"({"device": "x", "remote_cache": {"address": "redis://cache.internal:6380/2"}})",
      "/cfg/x.json");
  CHECK(f.remote_cache_address == "redis://cache.internal:6380/2");
  CHECK(parse_device_file(R"({"device": "x"})", "/cfg/x.json").remote_cache_address.empty());
  std::string e =
      config_error("{\"device\": \"x\",\n \"remote_cache\": {\"address\": \"ftp://c:1\"}}");
  CHECK(e.find("/cfg/dev.json:2:") != std::string::npos);
  CHECK(e.find("/remote_cache/address") != std::string::npos);
  CHECK(e.find("not a redis://, unix://, http:// or https:// address") != std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": {"adress": "redis://c:1"}})");
  CHECK(e.find("unknown key 'adress'; did you mean 'address'? (known: address)") !=
        std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": "redis://c:1"})");
  CHECK(e.find("expected an object") != std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": {}})");
  CHECK(e.find("missing 'address'") != std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": {"address": 6379}})");
  CHECK(e.find("expected a string") != std::string::npos);
}

// Backends and layers: validated at load time.

TEST_CASE("extends naming a missing layer fails at load time with file, line and key",
          "[unit][device-file]") {
  std::string msg =
      config_error("{\"device\": \"acc\",\n \"backends\": {\"mlir\": {\"extends\": [\"comon\"]}}}");
  CHECK(msg.find("/cfg/dev.json:2:") == 0);
  CHECK(msg.find("at /backends/mlir/extends/0") != std::string::npos);
  CHECK(msg.find("extends unknown layer 'comon'") != std::string::npos);
}

TEST_CASE("a cycle among layers fails at load time, naming the cycle", "[unit][device-file]") {
  std::string msg = config_error(R"({"device": "acc",
    "layers": {"a": {"extends": ["b"]}, "b": {"extends": ["c"]}, "c": {"extends": ["a"]}},
    "backends": {"x": {"extends": ["a"]}}})");
  CHECK(msg.find("cycle: a -> b -> c -> a") != std::string::npos);
  CHECK(config_error(
            R"({"device": "acc", "layers": {"a": {"extends": ["a"]}}, "backends": {"x": {}}})")
            .find("cycle: a -> a") != std::string::npos);
}

TEST_CASE("a backend name used twice, or as a layer too, fails at load time",
          "[unit][device-file]") {
  CHECK(config_error("{\"device\": \"acc\", \"backends\": {\"x\": {},\n \"x\": {}}}")
            .find("duplicate key '/backends/x'") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "layers": {"x": {}}, "backends": {"x": {}}})")
            .find("both a layer and a backend") != std::string::npos);
}

TEST_CASE("an unknown key one typo from a known one says which, in every object of the file",
          "[unit][device-file]") {
  CHECK(config_error("{\"device\": \"x\",\n \"librarys\": []}")
            .find("unknown key 'librarys'; did you mean 'libraries'? (known: ") !=
        std::string::npos);
  CHECK(config_error(R"({"device": "acc", "backends": {"x": {"extend": ["a"]}}})")
            .find("unknown key 'extend'; did you mean 'extends'?") != std::string::npos);
  CHECK(config_error(R"({"device": "x", "when": [{"aot_mdoe": true}]})")
            .find("unknown key 'aot_mdoe'; did you mean 'aot_mode'?") != std::string::npos);
  CHECK(config_error(R"({"device": "x", "exec": {"comand": ["p"]}})")
            .find("unknown key 'comand'; did you mean 'command'?") != std::string::npos);
  // Far from every key: no guess, only the list.
  std::string far = config_error(R"({"device": "x", "frobnicate": []})");
  CHECK(far.find("unknown key 'frobnicate' (known: ") != std::string::npos);
  CHECK(far.find("did you mean") == std::string::npos);
}

TEST_CASE("other load-time checks: default_backend, stray layers, exec with backends, keys",
          "[unit][device-file]") {
  CHECK(config_error(R"({"device": "acc", "backends": {"x": {}}, "default_backend": "y"})")
            .find("default_backend 'y' is not one of") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "layers": {"x": {}}})").find("defines none") !=
        std::string::npos);
  CHECK(config_error(R"({"device": "acc", "exec": {"command": ["p"]}, "backends": {"x": {}}})")
            .find("handles --backend itself") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "backends": {"x": {"extend": ["a"]}}})")
            .find("at /backends/x/extend: unknown key 'extend'") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "backends": {"X Y": {}}})").find("invalid name 'X Y'") !=
        std::string::npos);
}

TEST_CASE("a device file for a built-in device says whether it replaces or extends it",
          "[unit][device-file]") {
  for (const std::string device : {"cpu", "cuda", "xpu", "mps"}) {
    const std::string msg =
        config_error("{\n\"device\": \"" + device + "\",\n\"libraries\": [\"a\"]}");
    INFO(msg);
    CHECK(msg.find("/cfg/dev.json:2:") == 0);
    CHECK(msg.find("at /device") != std::string::npos);
    CHECK(msg.find("'" + device + "' is a built-in device") != std::string::npos);
    CHECK(msg.find("\"mode\": \"extend\"") != std::string::npos);
    CHECK(msg.find("\"mode\": \"replace\"") != std::string::npos);
  }
  // Said explicitly, either way, it loads.
  CHECK(parse_device_file(R"({"device": "cuda", "mode": "replace", "libraries": ["a"]})", "c.json")
            .mode == RegistrationMode::replace);
  CHECK(parse_device_file(R"({"device": "cpu", "mode": "extend", "libraries": ["a"]})", "c.json")
            .mode == RegistrationMode::extend);
  // Another device needs no mode.
  CHECK(parse_device_file(R"({"device": "acc", "libraries": ["a"]})", "a.json").mode ==
        RegistrationMode::replace);
}
