// Plugins: the mechanism that applies a device file's plugin section to a
// whole process (base-layer edits, every device's options, per backend and
// per release). The device here,
// "acc", is not torch_npu: a second out-of-tree package needs no C++.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/plugin.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;
using kbuild_test::TempDir;
using kbuild_test::write_file;

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

// choose_release: which known release kbuild reproduces for the package
// version it found (or the release the user named), and the note when it is
// not the installed one; the torch-line note.
namespace {

const std::string kAccReleases =
    kbuild_test::acc_device_file({R"("main": {"versions": ["3.0.0"], "torch": ["2.9", "3.0"]})"});

ReleaseChoice choose(const PluginSpec& plugin, const std::string& installed,
                     const std::string& torch_version, const std::string& named = "") {
  return choose_release(
      plugin, ReleaseQuery{"torch_acc", installed, torch_version, "", named, "ACC_RELEASE"});
}

}  // namespace

TEST_CASE("releases are chosen like pip would sort them", "[unit][plugin_release]") {
  DeviceFile f = parse_device_file(kAccReleases, "/cfg/acc.json");
  const PluginSpec& p = *f.plugin;
  CHECK(choose(p, "1.0.0.post1", "").release->version == "1.0.0.post1");
  CHECK(choose(p, "1.0.0.post1", "").note.empty());
  ReleaseChoice newer = choose(p, "1.0.0.post5", "");
  CHECK(newer.release->version == "1.0.0.post1");
  CHECK_THAT(newer.note, Catch::Contains("torch_acc 1.0.0.post5 is not a release kbuild knows") &&
                             Catch::Contains("1.0.0.post1, the nearest lower"));
  ReleaseChoice older = choose(p, "1.0.0rc1", "");
  CHECK(older.release->version == "1.0.0");  // nothing lower: the line's oldest
  CHECK_THAT(older.note, Catch::Contains("the oldest known release of its line"));
  ReleaseChoice none = choose(p, "", "1.0.0+cpu");
  CHECK(none.release->version == "1.0.0.post1");  // the newest of torch's line
  CHECK_THAT(none.note, Catch::Contains("the newest known release for torch 1.0"));
  // Without torch's version, the line of the Inductor profile in use stands in for it.
  ReleaseChoice by_profile =
      choose_release(p, ReleaseQuery{"torch_acc", "", "", "1.0", "", "ACC_RELEASE"});
  CHECK(by_profile.release->version == "1.0.0.post1");
  CHECK_THAT(by_profile.note,
             Catch::EndsWith("the newest known release for Inductor profile 1.0 (torch's version "
                             "is unknown)"));
  CHECK(by_profile.guessed);
  ReleaseChoice blind = choose(p, "", "");
  CHECK(blind.release->version == "2.0.0");  // a numbered release before the named line
  CHECK_THAT(blind.note,
             Catch::EndsWith("the newest known release (torch's version is unknown too)"));
}

TEST_CASE("a plugin that declares no releases gives none, and no note", "[unit][plugin_release]") {
  PluginSpec empty;
  ReleaseChoice choice = choose(empty, "1.0.0", "1.0.0");
  CHECK(choice.release == nullptr);
  CHECK(choice.note.empty());
}

TEST_CASE("an installed version with a local suffix is its known release, not an older one",
          "[unit][plugin_release]") {
  DeviceFile f = parse_device_file(kAccReleases, "/cfg/acc.json");
  // A local label ("+cpu") is a build of the same public release (PEP 440).
  ReleaseChoice local = choose(*f.plugin, "1.0.0.post1+cpu", "");
  REQUIRE(local.release);
  CHECK(local.release->version == "1.0.0.post1");
  CHECK(local.note.empty());
  // Still a release it does not know when the public part is unknown.
  CHECK(choose(*f.plugin, "1.0.0.post3+cpu", "").release->version == "1.0.0.post1");
}

TEST_CASE("a named release: its versions name it, and versions between lines fall to the nearest",
          "[unit][plugin_release]") {
  DeviceFile f = parse_device_file(kAccReleases, "/cfg/acc.json");
  const PluginSpec& p = *f.plugin;
  const PluginRelease& main = p.releases.back();
  CHECK(main.named);
  CHECK(main.torch_lines == std::vector<std::string>{"2.9", "3.0"});
  CHECK(p.releases.front().torch_lines == std::vector<std::string>{"1.0"});  // its own line
  ReleaseChoice built = choose(p, "3.0.0+git9e73e70", "");
  CHECK(built.release == &main);
  CHECK(built.note.empty());
  ReleaseChoice later = choose(p, "3.1.0", "");  // past every release: the newest below it
  CHECK(later.release == &main);
  CHECK_THAT(
      later.note,
      Catch::EndsWith("reproducing main (its version 3.0.0), the nearest lower known release"));
  ReleaseChoice between = choose(p, "2.5.0", "");  // no 2.5 release: the nearest older one
  CHECK(between.release->version == "2.0.0");
  CHECK(choose(p, "0.9.0", "").release->version == "1.0.0");  // below them all: the oldest
  // No version file: the newest release made for torch's line.
  CHECK(choose(p, "", "2.9.1").release == &main);
}

TEST_CASE("the release a user names wins over the version file, or is an error",
          "[unit][plugin_release]") {
  DeviceFile f = parse_device_file(kAccReleases, "/cfg/acc.json");
  const PluginSpec& p = *f.plugin;
  ReleaseChoice named = choose(p, "1.0.0", "", "main");
  CHECK(named.release->version == "main");
  CHECK(named.chosen_by == "ACC_RELEASE");
  CHECK(named.note.empty());
  CHECK(choose(p, "", "", "1.0.0.post1").release->version == "1.0.0.post1");
  ReleaseChoice unknown = choose(p, "1.0.0", "", "1.0.0.post3");
  CHECK(unknown.release->version == "1.0.0.post1");
  CHECK_THAT(unknown.note, Catch::StartsWith("ACC_RELEASE=1.0.0.post3 is not a release kbuild "
                                             "knows: reproducing 1.0.0.post1"));
  try {
    choose(p, "1.0.0", "", "nightly");
    FAIL("expected a usage error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()) ==
          "ACC_RELEASE=nightly: torch_acc has no release 'nightly' (releases: 1.0.0, "
          "1.0.0.post1, 2.0.0, main); name one of them, or a version like 2.12.0");
  }
}

TEST_CASE("the torch-line note says which Inductor profile stands in", "[unit][plugin_release]") {
  DeviceFile f = parse_device_file(kAccReleases, "/cfg/acc.json");
  const PluginRelease& main = f.plugin->releases.back();
  CHECK(torch_line_note(main, "torch_acc", "3.0", "3.0.1").empty());  // its own line's profile
  CHECK(torch_line_note(main, "torch_acc", "2.7", "2.9.0") ==
        "torch_acc release main is made for torch 2.9, 3.0, and kbuild has no Inductor profile "
        "for torch 2.9: profile 2.7 stands in (torch 2.9.0)");
  CHECK(torch_line_note(main, "torch_acc", "2.11", "2.11.0+cu130") ==
        "torch_acc release main is made for torch 2.9, 3.0, but torch here is 2.11.0+cu130: its "
        "Inductor profile 2.11 stands in (different lines: kbuild doctor warns)");
  CHECK(torch_line_note(main, "torch_acc", "2.11", "").empty());  // no torch: nothing to say
  CHECK(torch_line_of("2.11.0+cu130") == "2.11");
  CHECK(torch_line_of("nightly").empty());
}

// What doctor, reports and --version say about an active plugin: one line,
// and the warnings (a source checkout shadowing the package, mixed lines).
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
