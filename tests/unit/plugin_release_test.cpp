// choose_release: which known release kbuild reproduces for the package
// version it found, and the note when it is not the installed one.
#include "devices/plugin_release.hpp"

#include <catch2/catch.hpp>

#include "kbuild/device_file.hpp"
#include "kbuild/plugin_spec.hpp"

using namespace kbuild;

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

}  // namespace

TEST_CASE("releases are chosen like pip would sort them", "[unit][plugin_release]") {
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

TEST_CASE("a plugin that declares no releases gives none, and no note", "[unit][plugin_release]") {
  PluginSpec empty;
  ReleaseChoice choice = choose_release(empty, "torch_acc", "1.0.0", "1.0.0");
  CHECK(choice.release == nullptr);
  CHECK(choice.note.empty());
}

TEST_CASE("an installed version with a local suffix is its known release, not an older one",
          "[unit][plugin_release]") {
  DeviceFile f = parse_device_file(kAcc, "/cfg/acc.json");
  // A local label ("+cpu") is a build of the same public release (PEP 440).
  ReleaseChoice local = choose_release(*f.plugin, "torch_acc", "1.0.0.post1+cpu", "");
  REQUIRE(local.release);
  CHECK(local.release->version == "1.0.0.post1");
  CHECK(local.note.empty());
  // Still a release it does not know when the public part is unknown.
  CHECK(choose_release(*f.plugin, "torch_acc", "1.0.0.post3+cpu", "").release->version ==
        "1.0.0.post1");
}
