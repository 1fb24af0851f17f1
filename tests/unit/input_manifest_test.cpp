// The record of what a build was observed to do (observed_manifest): files
// read, with their digests; paths looked for and absent, with their
// directories' stamps; variables read; listings; and when it cannot be made
// at all (a program unobserved, a side output, an input changed meanwhile).
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include <catch2/catch.hpp>

#include "../support/cbor.hpp"
#include "../support/fake_file_system.hpp"
#include "../support/test_support.hpp"
#include "run/cache_key.hpp"
#include "run/input_manifest.hpp"
#include "run/observation.hpp"
#include "util/digest.hpp"
#include "util/json.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
using namespace kbuild_test;

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

struct timespec now() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

// The manifest of a build seen to read `read` and look for `absent`.
Result<std::string> manifest_observing(const Strings& read, const Strings& absent = {},
                                       const Environment* env = nullptr,
                                       struct timespec started = now()) {
  Observation observed;
  observed.reported = true;
  observed.read = read;
  observed.absent = absent;
  ObservedBuild build;
  build.env = env;
  build.started = started;
  return observed_manifest(observed, build);
}

}  // namespace

TEST_CASE("a manifest holds while each file keeps its stamp or its content",
          "[unit][input_manifest]") {
  TempDir tmp;
  write_file(tmp / "a.h", "one");
  write_file(tmp / "b.h", "two");
  Result<std::string> manifest = manifest_observing({tmp / "a.h", tmp / "b.h"});
  REQUIRE(manifest);
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  // Touched but the same bytes: still holds.
  fs::last_write_time(tmp / "a.h", fs::file_time_type::clock::now() + std::chrono::hours(1));
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  // The same size, other bytes.
  write_file(tmp / "b.h", "TWO");
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  write_file(tmp / "b.h", "two");
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  fs::remove(tmp / "a.h");
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));

  CHECK(inputs_unchanged(*manifest_observing({}), Environment{}, kbuild::system_file_system()));
  CHECK_FALSE(inputs_unchanged("", Environment{}, kbuild::system_file_system()));
  CHECK_FALSE(inputs_unchanged("\xa1\x66inputs\x05", Environment{},
                               kbuild::system_file_system()));  // CBOR {"inputs": 5}
  CHECK_FALSE(
      inputs_unchanged(std::string("garbage"), Environment{}, kbuild::system_file_system()));
}

TEST_CASE("an observed manifest refuses a file changed after the build started, or gone",
          "[unit][input_manifest]") {
  TempDir tmp;
  const struct timespec started = now();
  write_file(tmp / "late.h", "x");  // written after `started`
  fs::last_write_time(tmp / "late.h", fs::file_time_type::clock::now() + std::chrono::hours(1));
  Result<std::string> late = manifest_observing({tmp / "late.h"}, {}, nullptr, started);
  REQUIRE_FALSE(late);
  CHECK(late.why() == tmp / "late.h" + " changed during the build");
  Result<std::string> missing = manifest_observing({tmp / "missing.h"});
  REQUIRE_FALSE(missing);
  CHECK(missing.why() == tmp / "missing.h" + " was read by the compiler but is gone");
  // Looked for, absent then, there now: it appeared while the compiler ran.
  write_file(tmp / "appeared.h", "x");
  Result<std::string> appeared = manifest_observing({}, {tmp / "appeared.h"});
  REQUIRE_FALSE(appeared);
  CHECK(appeared.why() == tmp / "appeared.h" + " appeared while the compiler ran");
}

TEST_CASE(
    "an absent path holds through its directory's stamps, and each is checked when they "
    "change",
    "[unit][input_manifest]") {
  TempDir tmp;
  fs::create_directories(tmp / "inc");
  write_file(tmp / "inc/other.h", "x");
  struct timespec started = now();
  started.tv_sec += 1;  // the directory is older than the build: its stamps count
  Result<std::string> manifest = manifest_observing(
      {}, {tmp / "inc/a.h", tmp / "inc/b.h", tmp / "gone/c.h"}, nullptr, started);
  REQUIRE(manifest);
  Result<Manifest> view = read_manifest(*manifest);
  REQUIRE(view);
  // inc/ with its stamps; gone/ as missing, and the directory it would
  // appear in, with its stamps.
  std::map<std::string, std::int64_t> dirs;
  for (const ManifestDir& d : view->dirs) dirs[std::string(d.path)] = d.mtime_ns;
  REQUIRE(dirs.size() == 3);
  CHECK(dirs.at(tmp / "gone") == kNoDirectory);
  CHECK(dirs.at(tmp / "inc") > 0);
  CHECK(dirs.at(tmp.str()) > 0);
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  // Another file in inc/: its stamps change, each absent path is asked.
  write_file(tmp / "inc/unrelated.h", "x");
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  write_file(tmp / "inc/b.h", "x");
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  fs::remove(tmp / "inc/b.h");
  write_file(tmp / "gone/c.h", "x");  // its directory appeared too
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
}

TEST_CASE(
    "variables: as the compiler's environment gave them, not set by a program for its "
    "children, not how diagnostics look",
    "[unit][input_manifest]") {
  Environment env;
  env.set("CPATH", "/inc");
  env.set("TERM", "xterm");
  Observation observed;
  observed.reported = true;
  observed.variables = {{"CPATH", std::string("/inc")},
                        {"LD_RUN_PATH", std::nullopt},
                        {"COLLECT_GCC_OPTIONS", std::string("'-o' '/tmp/x'")},
                        {"TERM", std::string("xterm")}};
  ObservedBuild build;
  build.env = &env;
  build.started = now();
  Result<std::string> manifest = observed_manifest(observed, build);
  REQUIRE(manifest);
  Result<Manifest> view = read_manifest(*manifest);
  REQUIRE(view);
  std::vector<std::pair<std::string, std::optional<std::string>>> got;
  for (const ManifestVariable& v : view->variables)
    got.emplace_back(std::string(v.name),
                     v.value ? std::optional<std::string>(*v.value) : std::nullopt);
  CHECK(got == std::vector<std::pair<std::string, std::optional<std::string>>>{
                   {"CPATH", std::string("/inc")}, {"LD_RUN_PATH", std::nullopt}});
  CHECK(inputs_unchanged(*manifest, env, kbuild::system_file_system()));
  Environment other = env;
  other.set("TERM", "dumb");
  CHECK(inputs_unchanged(*manifest, other, kbuild::system_file_system()));
  other.set("LD_RUN_PATH", "/opt");
  CHECK_FALSE(inputs_unchanged(*manifest, other, kbuild::system_file_system()));
}

TEST_CASE("no manifest for what was not observed, or wrote beside its output",
          "[unit][input_manifest]") {
  TempDir tmp;
  ObservedBuild build;
  build.started = now();
  Observation nothing;
  Result<std::string> none = observed_manifest(nothing, build);
  REQUIRE_FALSE(none);
  CHECK(none.why().find("could not be observed") != std::string::npos);
  Observation static_program;
  static_program.reported = true;
  static_program.unobserved = {"/opt/bin/static-ld"};
  Result<std::string> unobserved = observed_manifest(static_program, build);
  REQUIRE_FALSE(unobserved);
  CHECK(unobserved.why().find("/opt/bin/static-ld ran but could not be observed") !=
        std::string::npos);
  Observation elsewhere;
  elsewhere.reported = true;
  elsewhere.unobservable = "distcc hands the compile to another machine";
  CHECK(observed_manifest(elsewhere, build).why() == elsewhere.unobservable);
  // A side output still there; a temporary removed; a log appended to.
  write_file(tmp / "k.map", "map");
  write_file(tmp / "runs.log", "run\n");
  Observation side;
  side.reported = true;
  side.written = {tmp / "k.map", tmp / "cc123.s"};
  side.appended = {tmp / "runs.log"};
  Result<std::string> with_side = observed_manifest(side, build);
  REQUIRE_FALSE(with_side);
  CHECK(with_side.why() == "the compiler wrote " + tmp / "k.map" +
                               " besides its output (a side "
                               "output)");
  side.written = {tmp / "cc123.s"};
  CHECK(observed_manifest(side, build));
  // In the work directory, only the build's own files.
  fs::create_directories(tmp / "work");
  write_file(tmp / "work/k.so", "out");
  write_file(tmp / "work/k.so.001r.expand", "dump");
  build.work_dir = tmp / "work";
  build.own_files = {tmp / "work/k.so"};
  Observation dumps;
  dumps.reported = true;
  dumps.written = {tmp / "work/k.so", tmp / "work/k.so.001r.expand"};
  Result<std::string> lost = observed_manifest(dumps, build);
  REQUIRE_FALSE(lost);
  CHECK(lost.why().find("k.so.001r.expand besides its output") != std::string::npos);
}

TEST_CASE("a listed directory holds while its names do", "[unit][input_manifest]") {
  TempDir tmp;
  write_file(tmp / "d/one", "x");
  Observation observed;
  observed.reported = true;
  observed.listed = {tmp / "d"};
  ObservedBuild build;
  build.started = now();
  Result<std::string> manifest = observed_manifest(observed, build);
  REQUIRE(manifest);
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  write_file(tmp / "d/one", "changed content, same name");
  CHECK(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
  write_file(tmp / "d/two", "x");
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}, kbuild::system_file_system()));
}

TEST_CASE("rebase_manifest moves the paths under a base, and only those", "[manifest][base-dir]") {
  nlohmann::json m = {
      {"inputs",
       {{"/job1/tree/h.h", 3, 7, "aa"}, {"/job10/h.h", 1, 2, "bb"}, {"/job1", 0, 0, "cc"}}},
      {"absent", {"/job1/tree/x.h", "/usr/include/x.h", "rel/x.h"}},
      {"libraries", {{"/job1/lib/libfoo.a", 10, 20}}},
      {"size", 5},
      {"digest", "dd"}};
  std::optional<std::string> shared = kbuild::rebase_manifest(to_cbor(m), "/job1", "<base>");
  REQUIRE(shared);
  nlohmann::json out = nlohmann::json::from_cbor(*shared);
  CHECK(out["inputs"][0][0] == "<base>/tree/h.h");
  CHECK(out["inputs"][1][0] == "/job10/h.h");  // another directory that starts alike
  CHECK(out["inputs"][2][0] == "<base>");
  CHECK(out["inputs"][0][3] == "aa");
  CHECK(out["absent"] == nlohmann::json({"<base>/tree/x.h", "/usr/include/x.h", "rel/x.h"}));
  CHECK(out["libraries"][0][0] == "<base>/lib/libfoo.a");
  CHECK(out["digest"] == "dd");
  std::optional<std::string> back = kbuild::rebase_manifest(*shared, "<base>", "/job2");
  REQUIRE(back);
  CHECK(nlohmann::json::from_cbor(*back)["inputs"][0][0] == "/job2/tree/h.h");
  CHECK_FALSE(kbuild::rebase_manifest("not cbor", "/job1", "<base>"));
}

TEST_CASE("rebase_word: a path under the base where an argument's path starts",
          "[cache_key][base-dir]") {
  using kbuild::rebase_word;
  CHECK(rebase_word("/ci/j1/k.cpp", "/ci/j1") == "<base>/k.cpp");
  CHECK(rebase_word("-I/ci/j1/inc", "/ci/j1") == "-I<base>/inc");
  CHECK(rebase_word("-Wl,-rpath,/ci/j1/lib:/ci/j1/lib2", "/ci/j1") ==
        "-Wl,-rpath,<base>/lib:<base>/lib2");
  CHECK(rebase_word("--sysroot=/ci/j1", "/ci/j1") == "--sysroot=<base>");
  CHECK(rebase_word("/ci/j10/k.cpp", "/ci/j1") == "/ci/j10/k.cpp");
  CHECK(rebase_word("/x/ci/j1/k.cpp", "/ci/j1") == "/x/ci/j1/k.cpp");
  CHECK(rebase_word("-DP=\"/ci/j1\"", "/ci/j1") == "-DP=\"/ci/j1\"");
  CHECK(rebase_word("-O2", "/ci/j1") == "-O2");
}

// Issue 46: a hit check that fails says which input no longer holds (for
// KBUILD_LOG and -v), never only "changed".
TEST_CASE("manifest_stale names the input that no longer holds, and its kind",
          "[unit][input_manifest]") {
  TempDir tmp;
  write_file(tmp / "a.h", "one");
  fs::create_directories(tmp / "listed");
  Result<std::string> files = manifest_observing({tmp / "a.h"});
  REQUIRE(files);
  nlohmann::json j = *parse_manifest(*files);
  j["absent"] = {tmp / "shadow.h"};
  using Array = nlohmann::json::array_t;  // braces alone would make objects
  j["variables"] = Array{Array{"CPATH", "/x"}, Array{"SECRET_TOKEN", nullptr}};
  j["listed"] = Array{Array{tmp / "listed", "not-the-digest"}};
  Environment env;
  env.set("CPATH", "/x");
  Result<Manifest> view = Failure{"not read yet"};
  auto stale = [&](const nlohmann::json& manifest) {
    static std::string bytes;  // the view's bytes outlive it
    bytes = to_cbor(manifest);
    view = read_manifest(bytes);
    REQUIRE(view);
    return manifest_stale(*view, env, kbuild::system_file_system());
  };
  // The listing is checked last: everything before it holds.
  std::optional<StaleInput> s = stale(j);
  REQUIRE(s);
  CHECK(s->kind == StaleKind::listing_changed);
  CHECK(s->what == tmp / "listed");
  j["listed"] = nlohmann::json::array();
  CHECK_FALSE(stale(j));
  CHECK(manifest_holds(*view, env, kbuild::system_file_system()));

  write_file(tmp / "a.h", "ONE");
  s = stale(j);
  REQUIRE(s);
  CHECK(s->kind == StaleKind::file_changed);
  CHECK(s->what == tmp / "a.h");
  CHECK(describe(*s) == tmp / "a.h" + " changed");
  write_file(tmp / "a.h", "one");

  write_file(tmp / "shadow.h", "");
  s = stale(j);
  REQUIRE(s);
  CHECK(s->kind == StaleKind::path_appeared);
  CHECK(s->what == tmp / "shadow.h");
  fs::remove(tmp / "shadow.h");

  env.set("SECRET_TOKEN", "hunter2");
  s = stale(j);
  REQUIRE(s);
  CHECK(s->kind == StaleKind::variable_differs);
  CHECK(s->what == "SECRET_TOKEN");  // the name, never a value
  CHECK(describe(*s).find("hunter2") == std::string::npos);
  CHECK(std::string(stale_kind_name(s->kind)) == "variable_differs");
}

// Issue 43 (cost): a hit stats each file by its name in its directory,
// opened once for a run of its files; still every file, on every hit.
TEST_CASE("each file read is checked by name in its directory, one sweep or two",
          "[unit][input_manifest]") {
  TempDir tmp;
  // More directories than are kept open at once, a directory whose files
  // come before and after a subdirectory's (a/x.h, a/sub/y.h, a/z.h), a
  // directory reached through a symlink, and a file that is a symlink.
  Strings read;
  for (int d = 0; d < 12; ++d)
    for (int f = 0; f < 3; ++f) {
      const std::string path = tmp / ("d" + std::to_string(d) + "/f" + std::to_string(f) + ".h");
      write_file(path, "content " + std::to_string(d * 10 + f));
      read.push_back(path);
    }
  for (const char* path : {"a/x.h", "a/sub/y.h", "a/z.h"}) {
    write_file(tmp / path, path);
    read.push_back(tmp / path);
  }
  write_file(tmp / "real/f1.h", "real");  // read only through the symlinks
  write_file(tmp / "target.h", "target");
  fs::create_directory_symlink(tmp / "real", tmp / "linked");
  read.push_back(tmp / "linked/f1.h");
  fs::create_symlink(tmp / "target.h", tmp / "a/alias.h");
  read.push_back(tmp / "a/alias.h");
  Result<std::string> manifest = manifest_observing(read);
  REQUIRE(manifest);
  Result<Manifest> view = read_manifest(*manifest);
  REQUIRE(view);
  REQUIRE(view->inputs.size() == read.size());
  auto index_of = [&](const std::string& path) {
    for (std::size_t i = 0; i < view->inputs.size(); ++i)
      if (view->inputs[i].path == path) return i;
    FAIL("not in the manifest: " << path);
    return std::size_t(0);
  };
  for (unsigned sweeps : {1u, 2u})
    CHECK_FALSE(first_changed_input(view->inputs, sweeps, kbuild::system_file_system()));

  // One file changed in a directory whose other files did not: the same
  // size, other bytes, a later mtime.
  auto change = [](const std::string& path, const std::string& bytes) {
    write_file(path, bytes);
    fs::last_write_time(path, fs::file_time_type::clock::now() + std::chrono::hours(1));
  };
  change(tmp / "a/z.h", "A/Z.H");  // after a/sub/'s file: a/ is opened again
  for (unsigned sweeps : {1u, 2u}) {
    std::optional<std::size_t> changed =
        first_changed_input(view->inputs, sweeps, kbuild::system_file_system());
    REQUIRE(changed);
    CHECK(view->inputs[*changed].path == tmp / "a/z.h");
  }
  // Two changed, one in each half: the first in the list is named.
  change(tmp / "d11/f2.h", "CONTENT 112");
  change(tmp / "d0/f0.h", "CONTENT 0");
  for (unsigned sweeps : {1u, 2u}) {
    std::optional<std::size_t> changed =
        first_changed_input(view->inputs, sweeps, kbuild::system_file_system());
    REQUIRE(changed);
    CHECK(*changed == index_of(tmp / "a/z.h"));  // "a/" sorts before "d0/"
  }
  write_file(tmp / "a/z.h", "a/z.h");  // the same bytes again: holds, by content
  write_file(tmp / "d0/f0.h", "content 0");
  write_file(tmp / "d11/f2.h", "content 112");
  for (unsigned sweeps : {1u, 2u})
    CHECK_FALSE(first_changed_input(view->inputs, sweeps, kbuild::system_file_system()));
  // Through the symlinks: the file they lead to.
  change(tmp / "real/f1.h", "REAL");
  change(tmp / "target.h", "TARGET");
  for (unsigned sweeps : {1u, 2u}) {
    std::optional<std::size_t> changed =
        first_changed_input(view->inputs, sweeps, kbuild::system_file_system());
    REQUIRE(changed);
    CHECK(view->inputs[*changed].path == tmp / "a/alias.h");
  }
  write_file(tmp / "target.h", "target");
  for (unsigned sweeps : {1u, 2u}) {
    std::optional<std::size_t> changed =
        first_changed_input(view->inputs, sweeps, kbuild::system_file_system());
    REQUIRE(changed);
    CHECK(view->inputs[*changed].path == tmp / "linked/f1.h");
  }
  write_file(tmp / "real/f1.h", "real");
  // Gone, and its whole directory gone.
  fs::remove(tmp / "d7/f1.h");
  for (unsigned sweeps : {1u, 2u})
    CHECK(first_changed_input(view->inputs, sweeps, kbuild::system_file_system()) ==
          index_of(tmp / "d7/f1.h"));
  fs::remove_all(tmp / "d7");
  for (unsigned sweeps : {1u, 2u})
    CHECK(first_changed_input(view->inputs, sweeps, kbuild::system_file_system()) ==
          index_of(tmp / "d7/f0.h"));
}

TEST_CASE("a manifest of many files is swept on two threads, and names the file changed",
          "[unit][input_manifest]") {
  TempDir tmp;
  Strings read;
  for (std::size_t i = 0; i < kTwoSweepFiles + 10; ++i) {
    const std::string path =
        tmp / ("dir" + std::to_string(i % 37) + "/h" + std::to_string(i) + ".h");
    write_file(path, "h");
    read.push_back(path);
  }
  Result<std::string> manifest = manifest_observing(read);
  REQUIRE(manifest);
  Result<Manifest> view = read_manifest(*manifest);
  REQUIRE(view);
  CHECK(manifest_holds(*view, Environment{}, kbuild::system_file_system()));
  for (const std::string& changed : {read.front(), read[read.size() / 2], read.back()}) {
    write_file(changed, "other");
    std::optional<StaleInput> stale =
        manifest_stale(*view, Environment{}, kbuild::system_file_system());
    REQUIRE(stale);
    CHECK(stale->kind == StaleKind::file_changed);
    CHECK(stale->what == changed);
    write_file(changed, "h");  // back as it was, by content
    CHECK(manifest_holds(*view, Environment{}, kbuild::system_file_system()));
  }
}

TEST_CASE("with the absences checked beside the files, a hit answers as one sweep does",
          "[unit][input_manifest]") {
  TempDir tmp;
  Strings read, absent;
  for (std::size_t i = 0; i < kAbsencesBeside + 10; ++i) {
    const std::string dir = tmp / ("dir" + std::to_string(i % 29));
    write_file(dir + "/h" + std::to_string(i) + ".h", "h");
    read.push_back(dir + "/h" + std::to_string(i) + ".h");
    absent.push_back(dir + "/missing" + std::to_string(i) + ".h");
  }
  Result<std::string> manifest = manifest_observing(read, absent);
  REQUIRE(manifest);
  Result<Manifest> view = read_manifest(*manifest);
  REQUIRE(view);
  CHECK(manifest_holds(*view, Environment{}, kbuild::system_file_system()));
  // A path that appears, alone: named.
  write_file(absent[absent.size() / 2], "shadow");
  std::optional<StaleInput> stale =
      manifest_stale(*view, Environment{}, kbuild::system_file_system());
  REQUIRE(stale);
  CHECK(stale->kind == StaleKind::path_appeared);
  CHECK(stale->what == absent[absent.size() / 2]);
  // With a file changed too, the file is named first.
  write_file(read.back(), "other");
  stale = manifest_stale(*view, Environment{}, kbuild::system_file_system());
  REQUIRE(stale);
  CHECK(stale->kind == StaleKind::file_changed);
  CHECK(stale->what == read.back());
  write_file(read.back(), "h");
  fs::remove(absent[absent.size() / 2]);
  CHECK(manifest_holds(*view, Environment{}, kbuild::system_file_system()));
}

// docs/cache.md's table of what a build reads is kept true by code: the
// variables it says are read but are not inputs (they only shape how
// diagnostics look or how many jobs run) are exactly the list the manifest
// leaves out. A row edited without the code (or the code without the row)
// fails here.
namespace {

// The table row of docs/cache.md whose first cell starts with `start`.
std::string cache_doc_row(const std::string& start) {
  const std::string doc = read_file(source_root() + "/docs/cache.md");
  const std::string at = "| " + start;
  const std::size_t from = doc.find(at);
  REQUIRE(from != std::string::npos);
  return doc.substr(from, doc.find('\n', from) - from);
}

// The backticked words of the row's second cell.
std::vector<std::string> cache_doc_quoted(const std::string& row_text) {
  const std::size_t start = row_text.find(" | ");
  const std::string cell = row_text.substr(start, row_text.find(" | ", start + 3) - start);
  std::vector<std::string> words;
  static const std::regex tick("`([^`]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), tick); it != std::sregex_iterator();
       ++it)
    words.push_back((*it)[1]);
  return words;
}

}  // namespace

TEST_CASE("docs/cache.md names exactly the variables read that are not inputs",
          "[unit][cache][docs]") {
  std::vector<std::string> named = cache_doc_quoted(cache_doc_row("variables read, not inputs"));
  std::set<std::string> doc(named.begin(), named.end());
  std::set<std::string> code(std::begin(kPresentationVariables), std::end(kPresentationVariables));
  CHECK(doc == code);
}

// A remote hit's manifest is restamped through the FileSystem it is given
// (issue 44: the seam passed in), here an in-memory tree on a fake clock.
TEST_CASE("restamp_here states and reads the inputs through the file system it is given",
          "[unit][input_manifest]") {
  using namespace std::chrono_literals;
  FakeFileSystem files;
  files.write("/kbuild-fake/src/k.h", "#define K 1\n");
  files.advance(5s);  // the directory's stamps settled
  Manifest manifest;
  manifest.inputs.push_back(
      {manifest.keep("/kbuild-fake/src/k.h"), 12, 1, manifest.keep(digest_hex("#define K 1\n"))});
  manifest.absent.push_back(manifest.keep("/kbuild-fake/src/missing.h"));
  CHECK_FALSE(restamp_here(manifest, Environment{}, files));
  CHECK(manifest.inputs[0].mtime_ns == ns(files.status("/kbuild-fake/src/k.h")->st_mtim));
  REQUIRE(manifest.dirs.size() == 1);
  CHECK(manifest.dirs[0].path == "/kbuild-fake/src");
  files.write("/kbuild-fake/src/k.h", "#define K 2\n");
  std::optional<StaleInput> stale = restamp_here(manifest, Environment{}, files);
  REQUIRE(stale);
  CHECK(stale->what == "/kbuild-fake/src/k.h");
}

// The manifest made and a hit's check run wholly through the FileSystem they
// are given (issue 44: cache and manifest code through the seam, passed in):
// an in-memory tree on a clock the test moves, no real directory, no sleep.
// Each case would break if any stat, read, readlink or listing went around
// the seam to the real file system (where none of these paths exist).
namespace {

using namespace std::chrono_literals;

// A build observed to read two headers, look for a shadowing header, follow
// a dangling link and list a directory, in a fake tree under /seam.
struct InputManifestSeamBuild {
  FakeFileSystem files;
  Observation observed;
  Environment env;

  InputManifestSeamBuild() {
    files.write("/seam/inc/a.h", "#define A 1\n");
    files.write("/seam/inc/b.h", "#define B 2\n");
    files.make_directories("/seam/sys");
    files.symlink("/seam/inc/gone.h", "old/gone.h");  // names nothing
    files.write("/seam/plugins/one.so", "1");
    files.advance(10s);  // what the build read predates it
    observed.reported = true;
    observed.read = {"/seam/inc/a.h", "/seam/inc/b.h"};
    observed.absent = {"/seam/sys/a.h", "/seam/inc/gone.h"};
    observed.listed = {"/seam/plugins"};
  }
  Result<Manifest> manifest() {
    ObservedBuild build;
    build.env = &env;
    build.started = files.now();
    build.files = &files;
    files.advance(1s);  // the compile ran
    Result<std::string> bytes = observed_manifest(observed, build);
    if (!bytes) return Failure{bytes.why()};
    kept = *bytes;
    return read_manifest(kept);
  }
  std::string kept;  // the manifest's bytes, which a read Manifest points into
};

}  // namespace

TEST_CASE("a manifest is made from what the file system it is given holds",
          "[unit][input_manifest][seam]") {
  InputManifestSeamBuild b;
  Result<Manifest> m = b.manifest();
  REQUIRE(m);
  REQUIRE(m->inputs.size() == 2);
  CHECK(m->inputs[0].path == "/seam/inc/a.h");
  CHECK(m->inputs[0].size == 12);
  CHECK(m->inputs[0].digest == digest_hex("#define A 1\n"));
  CHECK(m->inputs[0].mtime_ns == ns(b.files.status("/seam/inc/a.h")->st_mtim));
  // The dangling link's end is an absence too: the lookup went through it.
  CHECK(std::find(m->absent.begin(), m->absent.end(), "/seam/inc/old/gone.h") != m->absent.end());
  CHECK(std::find(m->absent.begin(), m->absent.end(), "/seam/sys/a.h") != m->absent.end());
  REQUIRE(m->listed.size() == 1);
  CHECK(m->listed[0].path == "/seam/plugins");
  CHECK(manifest_holds(*m, b.env, b.files));
}

TEST_CASE("a hit's check sees each change in the file system it is given",
          "[unit][input_manifest][seam]") {
  InputManifestSeamBuild b;
  Result<Manifest> made = b.manifest();
  REQUIRE(made);
  const Manifest& m = *made;
  REQUIRE(manifest_holds(m, b.env, b.files));
  b.files.advance(1h);

  SECTION("touched, same bytes: holds (by content)") {
    b.files.write("/seam/inc/a.h", "#define A 1\n");
    CHECK_FALSE(manifest_stale(m, b.env, b.files));
  }
  SECTION("other bytes") {
    b.files.write("/seam/inc/b.h", "#define B 3\n");
    std::optional<StaleInput> stale = manifest_stale(m, b.env, b.files);
    REQUIRE(stale);
    CHECK(stale->kind == StaleKind::file_changed);
    CHECK(stale->what == "/seam/inc/b.h");
  }
  SECTION("a header gone") {
    b.files.remove("/seam/inc/a.h");
    std::optional<StaleInput> stale = manifest_stale(m, b.env, b.files);
    REQUIRE(stale);
    CHECK(stale->what == "/seam/inc/a.h");
  }
  SECTION("a shadowing header appears where it was looked for") {
    b.files.write("/seam/sys/a.h", "#define A 9\n");
    std::optional<StaleInput> stale = manifest_stale(m, b.env, b.files);
    REQUIRE(stale);
    CHECK(stale->kind == StaleKind::path_appeared);
    CHECK(stale->what == "/seam/sys/a.h");
  }
  SECTION("what a dangling link names appears") {
    b.files.write("/seam/inc/old/gone.h", "int g;\n");
    std::optional<StaleInput> stale = manifest_stale(m, b.env, b.files);
    REQUIRE(stale);
    CHECK(stale->kind == StaleKind::path_appeared);
  }
  SECTION("a listed directory gains a name") {
    b.files.write("/seam/plugins/two.so", "2");
    std::optional<StaleInput> stale = manifest_stale(m, b.env, b.files);
    REQUIRE(stale);
    CHECK(stale->kind == StaleKind::listing_changed);
    CHECK(stale->what == "/seam/plugins");
  }
}

// Failed before input rows held the ctime (a stale hit).
TEST_CASE("other bytes under a file's old size and mtime are a change: its ctime moved",
          "[unit][input_manifest][seam]") {
  // touch -d, cp -p, tar and rsync -t give a file back an old mtime; a
  // symlinked include dir swapped to a tree of the same sizes and mtimes
  // names another file. Only the change time shows either.
  InputManifestSeamBuild b;
  Result<Manifest> made = b.manifest();
  REQUIRE(made);
  const Manifest& m = *made;
  REQUIRE(manifest_holds(m, b.env, b.files));
  const struct timespec was = b.files.status("/seam/inc/b.h")->st_mtim;
  b.files.advance(1h);
  b.files.write("/seam/inc/b.h", "#define B 3\n");  // the same size
  b.files.set_mtime("/seam/inc/b.h", was);
  b.files.advance(1h);  // settled: the stamps alone would be trusted
  std::optional<StaleInput> stale = manifest_stale(m, b.env, b.files);
  REQUIRE(stale);
  CHECK(stale->kind == StaleKind::file_changed);
  CHECK(stale->what == "/seam/inc/b.h");
  // The same bytes given back: it holds again, by content.
  b.files.write("/seam/inc/b.h", "#define B 2\n");
  b.files.set_mtime("/seam/inc/b.h", was);
  CHECK_FALSE(manifest_stale(m, b.env, b.files));
}

TEST_CASE("a file changed during the build is refused, by the given file system's times",
          "[unit][input_manifest][seam]") {
  InputManifestSeamBuild b;
  ObservedBuild build;
  build.env = &b.env;
  build.files = &b.files;
  build.started = b.files.now();
  b.files.advance(1s);
  b.files.write("/seam/inc/b.h", "#define B 4\n");  // while the compiler ran
  Uncacheable why{};
  Result<std::string> bytes = observed_manifest(b.observed, build, &why);
  REQUIRE_FALSE(bytes);
  CHECK(why == Uncacheable::input_changed);
  CHECK(bytes.why() == "/seam/inc/b.h changed during the build");
}

TEST_CASE("file digests are read through the file system given, a piece at a time",
          "[unit][digest][seam]") {
  FakeFileSystem files;
  const std::string big(3u << 20, 'x');  // three 1 MiB pieces
  files.write("/seam/big.bin", big);
  std::size_t pieces = 0;
  FileLookRequest how;
  how.visit = [&pieces](std::string_view) { ++pieces; };
  Result<FileLook> look = look_at_file(files, "/seam/big.bin", nullptr, 0, how);
  REQUIRE(look);
  CHECK(look->digest == digest_hex(big));
  CHECK(look->read);
  CHECK(pieces == 3);
  Result<FileLook> missing = look_at_file(files, "/seam/none", nullptr, 0, {});
  REQUIRE_FALSE(missing);
  CHECK(missing.why().find("/seam/none") != std::string::npos);
  files.make_directories("/seam/dir");
  CHECK_FALSE(file_digest(files, "/seam/dir", nullptr));
}
