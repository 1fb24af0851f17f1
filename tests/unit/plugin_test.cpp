// Plugins: a device file's package and plugin sections, validated at load,
// and the mechanism that applies them to a whole process (base-layer edits,
// every device's options, per backend and per release). The device here,
// "acc", is not torch_npu: a second out-of-tree package needs no C++.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/config_provider.hpp"
#include "devices/plugin_file.hpp"
#include "devices/plugin_release.hpp"
#include "kbuild/build_plan.hpp"
#include "kbuild/error.hpp"
#include "kbuild/package_version.hpp"
#include "kbuild/plugin_spec.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {

const char* kAcc = R"({
  "device": "acc",
  "definitions": ["USE_ACC"],
  "libraries": ["acc_rt"],
  "backends": {"fast": {}, "plain": {}},
  "default_backend": "fast",
  "package": {"name": "torch_acc", "root": "${env:ACC_ROOT}", "version_file": "version.py",
              "library": "lib/libtorch_acc.so", "source_checkout_mark": "../setup.py"},
  "plugin": {
    "backend_env": "ACC_BACKEND",
    "backends": {
      "fast": {
        "base": [{"list": "cflags", "drop": "march=native"},
                 {"list": "cflags", "replace": "O3", "with": "O2"}],
        "device_options": {"unless_env": {"ACC_NO_PATCH": "1"},
                           "every_device": {"include_dirs": ["/acc/every"]}}
      },
      "plain": {"note": "patches nothing"}
    },
    "releases": {
      "1.0.0": {},
      "1.0.0.post1": {"every_device": {"include_dirs": ["/acc/every-post1"]},
                      "device": {"libraries": ["acc_rt2"]}, "notes": {"plain": "post1 note"}},
      "2.0.0": {}
    }
  }
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

// kAcc with `from` replaced by `to` (once).
std::string acc_with(const std::string& from, const std::string& to) {
  std::string text = kAcc;
  auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

struct AccMachine {
  TempDir dir;
  Registry registry;
  Paths paths;
  Environment env;
  AccMachine(const std::string& version = "1.0.0.post1") {
    fs::create_directories(dir / "acc/lib");
    if (!version.empty()) write_file(dir / "acc/version.py", "__version__ = '" + version + "'\n");
    env.set("ACC_ROOT", dir / "acc");
    registry.register_device("acc", make_provider(parse_device_file(kAcc, "/cfg/acc.json")));
  }
  BuildPlan plan(const std::string& device, Strings plugins = {}, std::string backend = "") {
    BuildRequest r;
    r.query.device_type = device;
    r.query.backend = backend;
    r.plugins = plugins;
    r.sources = {"k.cpp"};
    r.use_torch = false;
    return plan_build(r, registry, ResolveContext{paths, env});
  }
};

bool has(const Strings& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("package and plugin sections load with their backends, edits and releases",
          "[unit][plugin]") {
  DeviceFile f = parse_device_file(kAcc, "/cfg/acc.json");
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

TEST_CASE("plugin sections are validated at load: file:line and key path", "[unit][plugin]") {
  CHECK_THAT(config_error(acc_with("\"note\": \"patches nothing\"", "\"notes\": \"x\"")),
             Catch::Contains("/cfg/acc.json:") &&
                 Catch::Contains("at /plugin/backends/plain/notes: unknown key 'notes'"));
  CHECK_THAT(config_error(acc_with("\"drop\": \"march=native\"",
                                   "\"drop\": \"march=native\", \"replace\": \"x\"")),
             Catch::Contains("at /plugin/backends/fast/base/0: give exactly one of 'drop'"));
  CHECK_THAT(
      config_error(acc_with("\"list\": \"cflags\", \"drop\"", "\"list\": \"flags\", \"drop\"")),
      Catch::Contains("at /plugin/backends/fast/base/0/list: 'flags' is not one of the 7"));
  CHECK_THAT(
      config_error(acc_with("\"plain\": {\"note\"", "\"slow\": {\"note\"")),
      Catch::Contains("at /backends/plain: backend 'plain' has no state in /plugin/backends"));
  CHECK_THAT(config_error(acc_with("\"backends\": {\"fast\": {}, \"plain\": {}}",
                                   "\"backends\": {\"fast\": {}}")),
             Catch::Contains("at /plugin/backends/plain: plugin backend 'plain' is not one of the "
                             "device's backends"));
  CHECK_THAT(config_error(acc_with("\"notes\": {\"plain\"", "\"notes\": {\"nope\"")),
             Catch::Contains("/notes/nope: 'nope' is not one of the plugin's backends"));
  CHECK_THAT(config_error(acc_with("\"2.0.0\": {}", "\"two\": {}")),
             Catch::Contains("at /plugin/releases/two: 'two' is not a release version"));
  CHECK_THAT(config_error(acc_with("\"ACC_NO_PATCH\"", "\"ACC NO\"")),
             Catch::Contains("'ACC NO' is not an environment variable name"));
  CHECK_THAT(
      config_error(acc_with("\"/acc/every\"", "\"${nope}\"")),
      Catch::Contains("at /plugin/backends/fast/device_options/every_device/include_dirs/0"));
  CHECK_THAT(config_error(acc_with("\"package\"", "\"pkg\"")),
             Catch::Contains("unknown key 'pkg'"));
  std::string no_package = kAcc;
  no_package.erase(no_package.find("\"package\""),
                   no_package.find("\"plugin\"") - no_package.find("\"package\""));
  CHECK_THAT(config_error(no_package),
             Catch::Contains("at /plugin/releases: releases are chosen by the package's version"));
}

TEST_CASE("release versions: parsed, lined and chosen like pip would sort them", "[unit][plugin]") {
  CHECK(parse_release_version("2.11.0.post2") == std::vector<long>{2, 11, 0, 2});
  CHECK(parse_release_version("2.11.0+cu130") == std::vector<long>{2, 11, 0});
  CHECK_FALSE(parse_release_version("post"));
  CHECK(release_line("2.11.0.post1") == "2.11.0");
  CHECK(release_line("2.11.0+cu130") == "2.11.0");

  DeviceFile f = parse_device_file(kAcc, "/cfg/acc.json");
  const PluginSpec& p = *f.plugin;
  CHECK(choose_release(p, "torch_acc", "1.0.0.post1", "").release->version == "1.0.0.post1");
  CHECK(choose_release(p, "torch_acc", "1.0.0.post1", "").note.empty());
  ReleaseChoice newer = choose_release(p, "torch_acc", "1.0.0.post5", "");
  CHECK(newer.release->version == "1.0.0.post1");
  CHECK_THAT(newer.note, Catch::Contains("torch_acc 1.0.0.post5 is not a release kbuild knows") &&
                             Catch::Contains("1.0.0.post1, the nearest lower"));
  ReleaseChoice older = choose_release(p, "torch_acc", "1.0.0rc1", "");
  CHECK(older.release->version == "1.0.0");  // nothing lower: the line's oldest
  CHECK_THAT(older.note, Catch::Contains("the oldest known release of its line"));
  ReleaseChoice none = choose_release(p, "torch_acc", "", "1.0.0+cpu");
  CHECK(none.release->version == "1.0.0.post1");  // the newest of torch's line
  CHECK_THAT(none.note, Catch::Contains("the newest known release for torch 1.0.0"));
  ReleaseChoice blind = choose_release(p, "torch_acc", "", "");
  CHECK(blind.release->version == "2.0.0");
  CHECK_THAT(blind.note,
             Catch::EndsWith("the newest known release (torch's version is unknown too)"));
}

TEST_CASE("read_package_version reads __version__ without importing anything", "[unit][plugin]") {
  TempDir dir;
  write_file(dir / "version.py", "# generated\n__version__ = \"2.11.0.post1\"\ngit = 'x'\n");
  CHECK(read_package_version(dir / "version.py") == std::optional<std::string>("2.11.0.post1"));
  write_file(dir / "empty.py", "version = '1'\n");
  CHECK_FALSE(read_package_version(dir / "empty.py"));
  CHECK_FALSE(read_package_version(dir / "missing.py"));
}

TEST_CASE("a plugin edits the base layer of every build and says where in explain's drops",
          "[unit][plugin]") {
  AccMachine m;
  BuildPlan plan = m.plan("cpu", {"acc"});
  Strings cflags = plan.options.values(OptionList::cflags);
  CHECK_FALSE(has(cflags, "march=native"));
  CHECK_FALSE(has(cflags, "O3"));
  CHECK(has(cflags, "O2"));
  bool said = false;
  for (const DroppedEntry& d : plan.options.dropped())
    said = said || (d.entry.value == "march=native" &&
                    d.reason == "dropped by /cfg/acc.json:13, plugin acc, backend fast");
  CHECK(said);
  // The replacement names its origin.
  for (const Entry& e : plan.options.entries(OptionList::cflags))
    if (e.value == "O2") CHECK(e.origin.line == 14);
  // Without the plugin, cpu stays upstream.
  CHECK(has(m.plan("cpu").options.values(OptionList::cflags), "march=native"));
}

TEST_CASE("a patching backend gives every device its options; its own device adds its lists",
          "[unit][plugin]") {
  AccMachine m("1.0.0");
  CHECK(m.plan("cpu", {"acc"}).options.values(OptionList::include_dirs) == Strings{"/acc/every"});
  // cuda's own branch is replaced too, as a monkey-patched hook would.
  BuildPlan cuda = m.plan("cuda", {"acc"});
  CHECK_FALSE(has(cuda.options.values(OptionList::definitions), " USE_CUDA"));
  BuildPlan acc = m.plan("acc");  // implies --plugin acc
  CHECK(acc.options.values(OptionList::definitions) == Strings{"USE_ACC"});
  CHECK(acc.options.values(OptionList::libraries) == Strings{"acc_rt"});

  // The variable in unless_env turns the device patch off, not the base edits.
  m.env.set("ACC_NO_PATCH", "1");
  BuildPlan off = m.plan("acc");
  CHECK(off.options.values(OptionList::definitions).empty());
  CHECK_FALSE(has(off.options.values(OptionList::cflags), "march=native"));
  CHECK_THAT(off.notes.back(), Catch::Contains("ACC_NO_PATCH=1 is set"));
}

TEST_CASE("the backend: --backend, else the plugin's variable, else the default",
          "[unit][plugin]") {
  AccMachine m("1.0.0");
  BuildPlan plain = m.plan("acc", {}, "plain");
  CHECK(plain.options.values(OptionList::definitions).empty());  // upstream: nothing of its own
  CHECK(has(plain.options.values(OptionList::cflags), "march=native"));
  CHECK(plain.plugins.active.at(0).backend_from == "--backend");
  // A device without backends hands --backend to the plugin.
  CHECK(m.plan("cpu", {"acc"}, "plain").plugins.active.at(0).backend == "plain");
  m.env.set("ACC_BACKEND", "plain");
  BuildPlan by_env = m.plan("cpu", {"acc"});
  CHECK(by_env.plugins.active.at(0).backend_from == "ACC_BACKEND");
  CHECK(has(by_env.options.values(OptionList::cflags), "march=native"));
  m.env.set("ACC_BACKEND", "nope");
  CHECK_THROWS_WITH(m.plan("cpu", {"acc"}),
                    Catch::Contains("ACC_BACKEND=nope: device 'acc' has no backend 'nope'"));
  CHECK_THROWS_WITH(m.plan("cpu", {"tpu"}), Catch::Contains("unknown plugin 'tpu' (--plugin)"));
}

TEST_CASE("releases: the installed one's lists and notes; an unknown one falls back with a note",
          "[unit][plugin]") {
  AccMachine post1("1.0.0.post1");
  BuildPlan p1 = post1.plan("acc");
  CHECK(p1.options.values(OptionList::include_dirs) == Strings{"/acc/every-post1"});
  CHECK(p1.options.values(OptionList::libraries) == Strings{"acc_rt2"});
  CHECK(post1.plan("acc", {}, "plain").notes.at(1) ==
        "plugin acc, backend plain (release "
        "1.0.0.post1): post1 note");
  AccMachine none("");
  BuildPlan fallback = none.plan("acc");
  CHECK(fallback.plugins.active.at(0).release->version == "2.0.0");
  CHECK_THAT(fallback.notes.at(0), Catch::Contains("plugin acc: torch_acc release unknown"));
}

TEST_CASE("a plugin whose device has no backends of its own still applies with --backend",
          "[unit][plugin]") {
  // The plugin has backends, the device file none: --backend is the plugin's.
  DeviceFile f = parse_device_file(R"({
  "device": "solo",
  "definitions": ["USE_SOLO"],
  "plugin": {"default_backend": "a", "backends": {"a": {"device_options": {}}, "b": {}}}
})",
                                   "/cfg/solo.json");
  Registry registry;
  registry.register_device("solo", make_provider(std::move(f)));
  Paths paths;
  Environment env;
  BuildRequest r;
  r.query.device_type = "solo";
  r.query.backend = "a";
  r.sources = {"k.cpp"};
  r.use_torch = false;
  BuildPlan plan = plan_build(r, registry, ResolveContext{paths, env});
  CHECK(plan.options.values(OptionList::definitions) == Strings{"USE_SOLO"});
  r.query.backend = "b";
  CHECK(plan_build(r, registry, ResolveContext{paths, env})
            .options.values(OptionList::definitions)
            .empty());
}
