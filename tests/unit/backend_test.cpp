// Backend layers: device-level lists for every backend, named layers composed
// with `extends`, each backend's own lists; all validated at load time.
#include <catch2/catch.hpp>

#include "devices/config_provider.hpp"
#include "kbuild/error.hpp"
#include "kbuild/registry.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

namespace {

// base <- common <- {triton, mlir}; extra <- mlir (a diamond through base).
const char* kLayered = R"({
  "device": "acc",
  "definitions": ["USE_ACC"],
  "layers": {
    "base": {"definitions": ["BASE"]},
    "common": {"extends": ["base"], "definitions": ["COMMON"], "libraries": ["acc_common"]},
    "extra": {"extends": ["base"], "cflags": ["fextra"]}
  },
  "backends": {
    "triton": {"extends": ["common"], "definitions": ["TRITON"]},
    "mlir": {"extends": ["common", "extra"], "definitions": ["MLIR"]},
    "graph": {"description": "no shared layers", "libraries": ["acc_graph"]}
  },
  "default_backend": "triton"
})";

std::string config_error(const std::string& text) {
  try {
    parse_device_file(text, "/cfg/acc.json");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::config);
    return e.what();
  }
  FAIL("expected a config error");
  return "";
}

OptionsResult resolve(const std::string& text, const std::string& backend) {
  Registry registry;
  registry.register_device("acc", make_provider(parse_device_file(text, "/cfg/acc.json")));
  Paths paths;
  Environment env;
  return registry.resolve(DeviceQuery{"acc", false, false, backend}, ResolveContext{paths, env},
                          false);
}

}  // namespace

TEST_CASE("a backend applies device lists, then its layers parents-first, then its own",
          "[unit][backend]") {
  OptionsResult r = resolve(kLayered, "mlir");
  CHECK(r.options.values(OptionList::definitions) ==
        Strings{"USE_ACC", "BASE", "COMMON", "MLIR"});  // base once, though reached twice
  CHECK(r.options.values(OptionList::cflags) == Strings{"fextra"});
  CHECK(r.options.entries(OptionList::definitions)[2].origin.provider == "config acc layer common");
  CHECK(r.options.entries(OptionList::definitions)[3].origin.provider == "config acc backend mlir");
}

TEST_CASE("without --backend the default backend applies; a backend may skip shared layers",
          "[unit][backend]") {
  CHECK(resolve(kLayered, "").options.values(OptionList::definitions) ==
        Strings{"USE_ACC", "BASE", "COMMON", "TRITON"});
  OptionsResult graph = resolve(kLayered, "graph");
  CHECK(graph.options.values(OptionList::definitions) == Strings{"USE_ACC"});
  CHECK(graph.options.values(OptionList::libraries) == Strings{"acc_graph"});
}

TEST_CASE("the chain of each backend is listed for `kbuild devices`", "[unit][backend]") {
  auto provider = make_provider(parse_device_file(kLayered, "/cfg/acc.json"));
  std::map<std::string, BackendInfo> by_name;
  for (const BackendInfo& b : provider->backends()) by_name[b.name] = b;
  CHECK(by_name["mlir"].chain == Strings{"base", "common", "extra", "mlir"});
  CHECK(by_name["triton"].is_default);
  CHECK(by_name["graph"].chain == Strings{"graph"});
}

TEST_CASE("an unknown backend, or --backend for a device without backends, is a usage error",
          "[unit][backend]") {
  CHECK_THROWS_WITH(resolve(kLayered, "cuda_graphs"),
                    Catch::Contains("has no backend 'cuda_graphs' (backends: graph, mlir, triton"));
  CHECK_THROWS_WITH(resolve(R"({"device": "acc"})", "triton"),
                    Catch::Contains("defines no backends"));
  Registry registry;
  Paths paths;
  Environment env;
  CHECK_THROWS_AS(registry.resolve(DeviceQuery{"cuda", false, false, "triton"},
                                   ResolveContext{paths, env}, false),
                  Error);
}

TEST_CASE("backends without a default: device-level options and a note", "[unit][backend]") {
  OptionsResult r = resolve(
      R"({"device": "acc", "definitions": ["A"], "backends": {"x": {"definitions": ["X"]}}})", "");
  CHECK(r.options.values(OptionList::definitions) == Strings{"A"});
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("none was chosen") != std::string::npos);
}

TEST_CASE("extends naming a missing layer fails at load time with file, line and key",
          "[unit][backend]") {
  std::string msg =
      config_error("{\"device\": \"acc\",\n \"backends\": {\"mlir\": {\"extends\": [\"comon\"]}}}");
  CHECK(msg.find("/cfg/acc.json:2:") == 0);
  CHECK(msg.find("at /backends/mlir/extends/0") != std::string::npos);
  CHECK(msg.find("extends unknown layer 'comon'") != std::string::npos);
}

TEST_CASE("a cycle among layers fails at load time, naming the cycle", "[unit][backend]") {
  std::string msg = config_error(R"({"device": "acc",
    "layers": {"a": {"extends": ["b"]}, "b": {"extends": ["c"]}, "c": {"extends": ["a"]}},
    "backends": {"x": {"extends": ["a"]}}})");
  CHECK(msg.find("cycle: a -> b -> c -> a") != std::string::npos);
  CHECK(config_error(
            R"({"device": "acc", "layers": {"a": {"extends": ["a"]}}, "backends": {"x": {}}})")
            .find("cycle: a -> a") != std::string::npos);
}

TEST_CASE("a backend name used twice, or as a layer too, fails at load time", "[unit][backend]") {
  CHECK(config_error("{\"device\": \"acc\", \"backends\": {\"x\": {},\n \"x\": {}}}")
            .find("duplicate key '/backends/x'") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "layers": {"x": {}}, "backends": {"x": {}}})")
            .find("both a layer and a backend") != std::string::npos);
}

TEST_CASE("other load-time checks: default_backend, stray layers, exec with backends, keys",
          "[unit][backend]") {
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
