// Plugins: the mechanism that applies a device file's plugin section to a
// whole process (base-layer edits, every device's options, per backend and
// per release). The device here,
// "acc", is not torch_npu: a second out-of-tree package needs no C++.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {

const std::string kAccWithBackend = kbuild_test::acc_device_file(
    {R"("2.1.0": {"base": {"fast": [{"list": "cflags", "drop": "O3"}]}})",
     R"("main": {"versions": ["9.0.0"], "backends": ["fast"], "unless_env": {"fast": {}}})"},
    true);

struct AccMachine {
  TempDir dir;
  Registry registry;
  Paths paths;
  Environment env;
  AccMachine(const std::string& version = "1.0.0.post1") {
    fs::create_directories(dir / "acc/lib");
    if (!version.empty()) write_file(dir / "acc/version.py", "__version__ = '" + version + "'\n");
    env.set("ACC_ROOT", dir / "acc");
    registry.register_device("acc",
                             make_provider(parse_device_file(kAccWithBackend, "/cfg/acc.json")));
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

}  // namespace

TEST_CASE("a plugin edits the base layer of every build and says where in explain's drops",
          "[unit][plugins]") {
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
          "[unit][plugins]") {
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
          "[unit][plugins]") {
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
          "[unit][plugins]") {
  AccMachine post1("1.0.0.post1");
  BuildPlan p1 = post1.plan("acc");
  CHECK(p1.options.values(OptionList::include_dirs) == Strings{"/acc/every-post1"});
  CHECK(p1.options.values(OptionList::libraries) == Strings{"acc_rt2"});
  CHECK(post1.plan("acc", {}, "plain").notes.at(1) ==
        "plugin acc, backend plain (release "
        "1.0.0.post1): post1 note");
  AccMachine none("");
  BuildPlan fallback = none.plan("acc");
  CHECK(fallback.plugins.active.at(0).release->version == "2.1.0");
  CHECK_THAT(fallback.notes.at(0), Catch::Contains("plugin acc: torch_acc release unknown"));
}

TEST_CASE("a plugin whose device has no backends of its own still applies with --backend",
          "[unit][plugins]") {
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
  r.query.backend = std::string("a");
  r.sources = {"k.cpp"};
  r.use_torch = false;
  BuildPlan plan = plan_build(r, registry, ResolveContext{paths, env});
  CHECK(plan.options.values(OptionList::definitions) == Strings{"USE_SOLO"});
  r.query.backend = std::string("b");
  CHECK(plan_build(r, registry, ResolveContext{paths, env})
            .options.values(OptionList::definitions)
            .empty());
}

TEST_CASE("a release's own base edits replace its backend's, for that release only",
          "[unit][plugins]") {
  // 2.1.0 drops -O3 and keeps -march=native: its older function patched less.
  Strings newer = AccMachine("2.1.0").plan("acc").options.values(OptionList::cflags);
  CHECK(!has(newer, "O3"));
  CHECK(!has(newer, "O2"));
  CHECK(has(newer, "march=native"));
  // Releases without their own keep the backend's edits.
  Strings older = AccMachine("2.0.0").plan("acc").options.values(OptionList::cflags);
  CHECK(has(older, "O2"));
  CHECK(!has(older, "march=native"));
  // A backend the release names no edits for keeps its own (none for plain).
  CHECK(has(AccMachine("2.1.0").plan("acc", {}, "plain").options.values(OptionList::cflags), "O3"));
}

TEST_CASE("a release may lack backends and ignore a switch; its variable names a release",
          "[unit][plugins]") {
  AccMachine m("9.0.0");  // what the named line's version file says
  CHECK(m.plan("acc").plugins.active.at(0).release->version == "main");
  m.env.set("ACC_NO_PATCH", "1");  // honoured by the backend, not by this release
  BuildPlan ignored = m.plan("acc");
  CHECK(ignored.plugins.active.at(0).patches_device);
  CHECK(has(ignored.options.values(OptionList::include_dirs), "/acc/every"));
  CHECK(has(ignored.notes,
            "plugin acc, backend fast (release main): ACC_NO_PATCH=1 is set, but "
            "this release ignores it: its device-options patch is unconditional"));
  CHECK_THROWS_WITH(m.plan("acc", {}, "plain"),
                    "device 'acc' has no backend 'plain' in release main (its backends: fast, in "
                    "/cfg/acc.json): choose one of them, or name another release with ACC_RELEASE");
  m.env.set("ACC_BACKEND", "plain");
  CHECK_THROWS_WITH(m.plan("cpu", {"acc"}),
                    Catch::StartsWith("ACC_BACKEND=plain: device 'acc' has no backend 'plain' in "
                                      "release main"));

  AccMachine named("1.0.0");
  named.env.set("ACC_RELEASE", "main");
  BuildPlan plan = named.plan("acc");
  const ActivePlugin& p = plan.plugins.active.at(0);
  CHECK(p.release->version == "main");
  CHECK(p.release_from == "ACC_RELEASE");
  named.env.set("ACC_RELEASE", "nightly");
  CHECK_THROWS_WITH(named.plan("acc"),
                    Catch::StartsWith("ACC_RELEASE=nightly: torch_acc has no release 'nightly'"));
}
