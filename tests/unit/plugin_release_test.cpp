// choose_release: which known release kbuild reproduces for the package
// version it found (or the release the user named), and the note when it is
// not the installed one; the torch-line note.
#include "devices/plugin.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;

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
