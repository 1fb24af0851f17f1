// The list provider: device lists, the "when" blocks that apply, then a
// backend's layers parents-first, then its own; variables expanded when the
// device is resolved.
#include "devices/device_file_load.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using namespace kbuild_test;
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

OptionsResult resolve(const std::string& text, const std::string& backend,
                      const Environment& env = Environment{},
                      const std::string& path = "/cfg/acc.json") {
  Registry registry;
  registry.register_device("acc", make_provider(parse_device_file(text, path)));
  Paths paths;
  return registry.resolve(DeviceQuery{"acc", false, false, backend}, ResolveContext{paths, env},
                          false);
}

}  // namespace

TEST_CASE("a backend applies device lists, then its layers parents-first, then its own",
          "[unit][list_provider]") {
  OptionsResult r = resolve(kLayered, "mlir");
  CHECK(r.options.values(OptionList::definitions) ==
        Strings{"USE_ACC", "BASE", "COMMON", "MLIR"});  // base once, though reached twice
  CHECK(r.options.values(OptionList::cflags) == Strings{"fextra"});
  CHECK(r.options.entries(OptionList::definitions)[2].origin.provider == "config acc layer common");
  CHECK(r.options.entries(OptionList::definitions)[3].origin.provider == "config acc backend mlir");
}

TEST_CASE("without --backend the default backend applies; a backend may skip shared layers",
          "[unit][list_provider]") {
  CHECK(resolve(kLayered, "").options.values(OptionList::definitions) ==
        Strings{"USE_ACC", "BASE", "COMMON", "TRITON"});
  OptionsResult graph = resolve(kLayered, "graph");
  CHECK(graph.options.values(OptionList::definitions) == Strings{"USE_ACC"});
  CHECK(graph.options.values(OptionList::libraries) == Strings{"acc_graph"});
}

TEST_CASE("the chain of each backend is listed for `kbuild devices`", "[unit][list_provider]") {
  auto provider = make_provider(parse_device_file(kLayered, "/cfg/acc.json"));
  std::map<std::string, BackendInfo> by_name;
  for (const BackendInfo& b : provider->backends()) by_name[b.name] = b;
  CHECK(by_name["mlir"].chain == Strings{"base", "common", "extra", "mlir"});
  CHECK(by_name["triton"].is_default);
  CHECK(by_name["graph"].chain == Strings{"graph"});
}

TEST_CASE("an unknown backend, or --backend for a device without backends, is a usage error",
          "[unit][list_provider]") {
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

TEST_CASE("backends without a default: device-level options and a note", "[unit][list_provider]") {
  OptionsResult r = resolve(
      R"({"device": "acc", "definitions": ["A"], "backends": {"x": {"definitions": ["X"]}}})", "");
  CHECK(r.options.values(OptionList::definitions) == Strings{"A"});
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("none was chosen") != std::string::npos);
}

TEST_CASE("a required variable that is unset fails when the device is resolved, with its help",
          "[unit][list_provider]") {
  const char* with_help = R"({"device": "acc", "env_help": {"ACC_HOME": "source acc/env.sh"},
    "include_dirs": ["${env:ACC_HOME}/include"]})";
  const char* without_help = R"({"device": "acc",
    "include_dirs": ["${env:ACC_HOME}/include"]})";
  CHECK_NOTHROW(make_provider(parse_device_file(with_help, "/cfg/acc.json")));
  try {
    resolve(with_help, "");
    FAIL("resolved without ACC_HOME");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::provider);
    CHECK(std::string(e.what()) == "device 'acc' (/cfg/acc.json:2): source acc/env.sh");
  }
  try {
    resolve(without_help, "");
    FAIL("resolved without ACC_HOME");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::provider);
    CHECK(std::string(e.what()) ==
          "device 'acc' (/cfg/acc.json:2): environment variable ACC_HOME is not set; set it, or "
          "give a default as ${env:ACC_HOME:-VALUE} in /cfg/acc.json");
  }
}

TEST_CASE("a required variable that is set but empty is said to be empty, not unset",
          "[unit][list_provider]") {
  const Environment empty{{{"ACC_HOME", ""}}};
  try {
    resolve(R"({"device": "acc",
    "include_dirs": ["${env:ACC_HOME}/include"]})",
            "", empty);
    FAIL("resolved with an empty ACC_HOME");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::provider);
    CHECK(std::string(e.what()) ==
          "device 'acc' (/cfg/acc.json:2): environment variable ACC_HOME is set but empty; set it "
          "to a value, or give a default as ${env:ACC_HOME:-VALUE} in /cfg/acc.json");
  }
  try {
    resolve(R"({"device": "acc", "env_help": {"ACC_HOME": "source acc/env.sh"},
    "include_dirs": ["${env:ACC_HOME}/include"]})",
            "", empty);
    FAIL("resolved with an empty ACC_HOME");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "device 'acc' (/cfg/acc.json:2): source acc/env.sh (ACC_HOME is empty)");
  }
}

TEST_CASE(
    "relative include and library dirs are relative to the device file, not the working "
    "directory",
    "[unit][list_provider]") {
  OptionsResult r = resolve(R"({"device": "acc",
    "include_dirs": ["include", "../sdk/include", "/abs/include", "${config_dir}/x"],
    "libraries_dirs": ["lib64"], "libraries": ["acc_rt"], "cflags": ["O2"]})",
                            "", Environment{}, "/etc/acc/devices.d/acc.json");
  CHECK(r.options.values(OptionList::include_dirs) ==
        Strings{"/etc/acc/devices.d/include", "/etc/acc/sdk/include", "/abs/include",
                "/etc/acc/devices.d/x"});
  CHECK(r.options.values(OptionList::libraries_dirs) == Strings{"/etc/acc/devices.d/lib64"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"acc_rt"});  // names, not paths
  CHECK(r.options.values(OptionList::cflags) == Strings{"O2"});
}

TEST_CASE("an entry under an unknown root is left out with a note naming the option",
          "[unit][list_provider]") {
  OptionsResult r = resolve(R"({"device": "acc",
    "include_dirs": ["${torch_npu_root}/include", "/kept"]})",
                            "");
  CHECK(r.options.values(OptionList::include_dirs) == Strings{"/kept"});
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] ==
        "device 'acc': left out include_dirs entry \"${torch_npu_root}/include\" "
        "(/cfg/acc.json:2): torch_npu_root is unknown (see --torch-npu-root)");
}

TEST_CASE("when blocks apply on their conditions; entries carry file and line",
          "[unit][list_provider]") {
  const char* text = R"({"device": "acc", "libraries": ["acc"],
    "when": [{"aot_mode": true, "libraries": ["acc_aot"]},
             {"compile_only": true, "cflags": ["fsyntax"]}]})";
  auto provider = make_provider(parse_device_file(text, "/cfg/acc.json"));
  Paths paths;
  Environment env;
  ResolveContext ctx{paths, env};
  CHECK(provider->options(DeviceQuery{"acc", false, false}, ctx)
            .options.values(OptionList::libraries) == Strings{"acc"});
  OptionsResult aot = provider->options(DeviceQuery{"acc", true, false}, ctx);
  CHECK(aot.options.values(OptionList::libraries) == Strings{"acc", "acc_aot"});
  CHECK(aot.options.values(OptionList::cflags).empty());
  const auto& entry = aot.options.entries(OptionList::libraries)[1];
  CHECK(entry.origin.provider == "config acc");
  CHECK(entry.origin.file == "/cfg/acc.json");
  CHECK(entry.origin.line == 2);
  CHECK(
      provider->options(DeviceQuery{"acc", false, true}, ctx).options.values(OptionList::cflags) ==
      Strings{"fsyntax"});
  CHECK(provider->kind() == "device file");
  CHECK(provider->source() == "/cfg/acc.json");
}

TEST_CASE("${config_dir} and a relative launcher are the device file's directory",
          "[unit][list_provider]") {
  TempDir dir;
  write_file(dir / "acc.json", R"({"device": "acc", "include_dirs": ["${config_dir}/inc"],
    "launcher": "./tools/wrap --fast"})");
  auto provider = make_provider(load_device_file(dir / "acc.json"));
  Paths paths;
  Environment env;
  CHECK(provider->options(DeviceQuery{"acc", false, false}, ResolveContext{paths, env})
            .options.values(OptionList::include_dirs) == Strings{dir / "inc"});
  CHECK(device_file_dir(dir / "acc.json") == dir.str());
  CHECK(device_file_dir("acc.json") == fs::current_path().string());
  write_file(dir / "tools/wrap", "#!/bin/sh\n", true);
  CHECK(provider->launcher() == dir / "tools/wrap" + " --fast");
  // A program others could write is refused before it is named.
  fs::permissions(dir / "tools/wrap", fs::perms::others_write, fs::perm_options::add);
  CHECK_THROWS_WITH(provider->launcher(), Catch::Contains("world-writable"));
}
