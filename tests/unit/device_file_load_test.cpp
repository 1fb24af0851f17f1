#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

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

TEST_CASE("libraries, include and library dirs written with their -l, -I, -L are warned about",
          "[device_file_lint]") {
  DeviceFile f = parse_device_file(R"({
  "device": "acc",
  "libraries": ["acc_rt", "-lfoo"],
  "include_dirs": ["-I/opt/acc/include"],
  "libraries_dirs": ["/opt/acc/lib", "-L/opt/acc/lib64"],
  "layers": {"base": {"libraries": ["-lbar"]}},
  "backends": {"fast": {"extends": ["base"]}}
})",
                                   "/cfg/acc.json");
  std::vector<std::string> warnings = device_file_warnings(f);
  REQUIRE(warnings.size() == 4);
  CHECK(warnings[0].rfind("/cfg/acc.json:4: include_dirs entry \"-I/opt/acc/include\"", 0) == 0);
  CHECK(warnings[0].find("gets \"-I-I/opt/acc/include\"; write \"/opt/acc/include\"") !=
        std::string::npos);
  CHECK(warnings[1].rfind("/cfg/acc.json:5: libraries_dirs entry \"-L/opt/acc/lib64\"", 0) == 0);
  CHECK(warnings[1].find("write \"/opt/acc/lib64\"") != std::string::npos);
  CHECK(warnings[2].rfind("/cfg/acc.json:3: libraries entry \"-lfoo\"", 0) == 0);
  CHECK(warnings[2].find("gets \"-l-lfoo\"; write \"foo\"") != std::string::npos);
  CHECK(warnings[3].rfind("/cfg/acc.json:6: libraries entry \"-lbar\"", 0) == 0);
}

TEST_CASE("\"mode\": \"extend\" is warned about on a device that is not built in, with file:line",
          "[device_file_lint]") {
  DeviceFile acc =
      parse_device_file("{\"device\": \"acc\",\n \"mode\": \"extend\"}", "/cfg/a.json");
  std::vector<std::string> warnings = device_file_warnings(acc);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("/cfg/a.json:2: \"mode\": \"extend\" on device 'acc', which is not built "
                          "in",
                          0) == 0);
  CHECK(warnings[0].find("drop \"mode\", or extend a built-in device (cpu, cuda, xpu, mps)") !=
        std::string::npos);
  DeviceFile cuda =
      parse_device_file(R"({"device": "cuda", "mode": "extend", "libraries": ["cublas"]})", "c");
  CHECK(device_file_warnings(cuda).empty());
  DeviceFile replaced = parse_device_file(R"({"device": "acc", "mode": "replace"})", "r");
  CHECK(device_file_warnings(replaced).empty());
}

// make_provider: the provider a device file describes.
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

// The exec provider: an external program asked for the 7 lists (here small
// shell scripts, which kbuild executes directly: the script's #! line is
// the script's own business).
namespace {

struct ExecFixture {
  TempDir dir;
  Paths paths;
  Environment env = Environment::from_process();

  std::shared_ptr<const Provider> provider(const std::string& script, double timeout_s = 5) {
    write_file(dir / "provider.sh", "#!/bin/sh\n" + script, true);
    std::string json =
        "{\"device\": \"fake\", \"exec\": {\"command\": [\"./provider.sh\", \"first arg\"], "
        "\"timeout_s\": " +
        std::to_string(timeout_s) + "}}";
    write_file(dir / "fake.json", json);
    return make_provider(load_device_file(dir / "fake.json"));
  }
  OptionsResult resolve(const std::shared_ptr<const Provider>& p, bool aot = false) {
    return p->options(DeviceQuery{"fake", aot, false}, ResolveContext{paths, env});
  }
  std::string error_of(const std::shared_ptr<const Provider>& p) {
    try {
      resolve(p);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::provider);
      return std::string(e.what()) + "\n" + e.detail();
    }
    FAIL("expected a provider error");
    return "";
  }
};

}  // namespace

TEST_CASE("an exec provider gets the device, aot_mode and compile_only and returns the 7 lists",
          "[unit][exec_provider]") {
  ExecFixture f;
  auto p = f.provider(
      "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args.txt\"\n"
      "echo '{\"definitions\": [\"USE_FAKE\"], \"libraries\": [\"fake\"], \"include_dirs\": [\"/f "
      "inc\"]}'\n");
  OptionsResult r = f.resolve(p, true);
  CHECK(r.options.values(OptionList::definitions) == Strings{"USE_FAKE"});
  CHECK(r.options.values(OptionList::include_dirs) == Strings{"/f inc"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"fake"});
  CHECK(read_file(f.dir / "args.txt") ==
        "first arg\n--device-type=fake\n--aot-mode=true\n--compile-only=false\n");
  CHECK(r.options.entries(OptionList::libraries)[0].origin.file == f.dir / "fake.json");
}

TEST_CASE("an exec provider that exits non-zero is a provider error showing its stderr",
          "[unit][exec_provider]") {
  ExecFixture f;
  std::string msg = f.error_of(f.provider("echo 'CANN toolkit missing' >&2\nexit 3\n"));
  CHECK(msg.find("device 'fake' exec provider") == 0);
  CHECK(msg.find("exit code 3") != std::string::npos);
  CHECK(msg.find("CANN toolkit missing") != std::string::npos);
}

TEST_CASE("an exec provider printing garbage or wrong JSON is a provider error",
          "[unit][exec_provider]") {
  ExecFixture f;
  CHECK(f.error_of(f.provider("echo 'hello there'\n")).find("not JSON") != std::string::npos);
  CHECK(f.error_of(f.provider("echo '[1, 2]'\n")).find("not an object") != std::string::npos);
  CHECK(f.error_of(f.provider("echo '{\"libs\": []}'\n")).find("unknown key 'libs'") !=
        std::string::npos);
  CHECK(f.error_of(f.provider("echo '{\"libraries\": [1]}'\n")).find("non-string") !=
        std::string::npos);
}

TEST_CASE("an exec provider that hangs is stopped at its time-out", "[unit][exec_provider]") {
  ExecFixture f;
  auto start = std::chrono::steady_clock::now();
  // It blocks on a FIFO nobody writes: only the time-out ends it.
  const std::string never = never_fifo(f.dir / "never");
  std::string msg = f.error_of(f.provider("echo started >&2\nexec cat '" + never + "'\n", 1));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(msg.find("timed out after 1s") != std::string::npos);
  CHECK(msg.find("started") != std::string::npos);
  CHECK(took < 10);
}

TEST_CASE("an exec provider whose program is missing is a provider error",
          "[unit][exec_provider]") {
  ExecFixture f;
  write_file(f.dir / "fake.json",
             "{\"device\": \"fake\", \"exec\": {\"command\": [\"./nope.sh\"]}}");
  auto p = make_provider(load_device_file(f.dir / "fake.json"));
  CHECK(f.error_of(p).find("not found or not executable") != std::string::npos);
}

TEST_CASE("an exec provider is told the chosen backend", "[unit][exec_provider]") {
  ExecFixture f;
  auto p = f.provider("printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args.txt\"\necho '{}'\n");
  p->options(DeviceQuery{"fake", false, true, "ascendc"}, ResolveContext{f.paths, f.env});
  CHECK(
      read_file(f.dir / "args.txt") ==
      "first arg\n--device-type=fake\n--aot-mode=false\n--compile-only=true\n--backend=ascendc\n");
}

TEST_CASE("a number too large for a double is a provider error, not a crash (found by fuzzing)",
          "[unit][exec_provider]") {
  try {
    parse_provider_output("{\"cflags\": [1e999999]}", "prov", Origin{});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::provider);
    CHECK(std::string(e.what()).find("prov: output is not JSON") == 0);
  }
}

TEST_CASE("parse_provider_output: some of the 7 keys, each an array of strings",
          "[unit][exec_provider]") {
  Origin origin{Layer::device, "exec acc", "/cfg/acc.json", 1};
  BuildOptions o = parse_provider_output(
      R"({"cflags": ["O2", "g"], "libraries": [], "include_dirs": ["/a b"]})", "prov", origin);
  CHECK(o.values(OptionList::cflags) == Strings{"O2", "g"});
  CHECK(o.values(OptionList::include_dirs) == Strings{"/a b"});
  CHECK(o.values(OptionList::libraries).empty());
  CHECK(o.entries(OptionList::cflags)[0].origin.provider == "exec acc");
  CHECK(parse_provider_output("{}", "prov", origin).values(OptionList::cflags).empty());
  CHECK_THROWS_WITH(parse_provider_output(R"({"cflags": "O2"})", "prov", origin),
                    "prov: output key 'cflags' is not an array");
  CHECK_THROWS_AS(parse_provider_output("", "prov", origin), Error);
}

// The list provider: device lists, the "when" blocks that apply, then a
// backend's layers parents-first, then its own; variables expanded when the
// device is resolved.
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
