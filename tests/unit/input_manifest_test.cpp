// The record of what a build read: the dependency list's paths, and a
// manifest of files (size, mtime, SHA-1) that holds while each is unchanged.
#include "run/input_manifest.hpp"

#include <catch2/catch.hpp>
#include <ctime>

#include "../support/test_support.hpp"
#include "run/cache_key.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

struct timespec now() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

// Answers with fixed output and records what it was asked.

}  // namespace

TEST_CASE("parse_depfile: the paths after the first colon, continuations and escaped blanks",
          "[unit][input_manifest]") {
  CHECK(parse_depfile("k.o: k.cpp a.h\n") == Strings{"k.cpp", "a.h"});
  CHECK(parse_depfile("k.o: k.cpp \\\n  /x/a.h\t/y/b.h \\\n /z/c.h\n") ==
        Strings{"k.cpp", "/x/a.h", "/y/b.h", "/z/c.h"});
  CHECK(parse_depfile("k.o: /a\\ b/c.h d.h") == Strings{"/a b/c.h", "d.h"});
  CHECK(parse_depfile("k.o:\n k.cpp\n") == Strings{"k.cpp"});
  CHECK(parse_depfile("").empty());
  CHECK(parse_depfile("no rule here").empty());
  CHECK(parse_depfile("k.o: ").empty());
}

TEST_CASE("a manifest holds while each file keeps its stamp or its content",
          "[unit][input_manifest]") {
  TempDir tmp;
  write_file(tmp / "a.h", "one");
  write_file(tmp / "b.h", "two");
  Result<std::string> manifest = input_manifest({tmp / "a.h", tmp / "b.h"}, now());
  REQUIRE(manifest);
  CHECK(inputs_unchanged(*manifest, Environment{}));
  // Touched but the same bytes: still holds.
  fs::last_write_time(tmp / "a.h", fs::file_time_type::clock::now() + std::chrono::hours(1));
  CHECK(inputs_unchanged(*manifest, Environment{}));
  // The same size, other bytes.
  write_file(tmp / "b.h", "TWO");
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}));
  write_file(tmp / "b.h", "two");
  CHECK(inputs_unchanged(*manifest, Environment{}));
  fs::remove(tmp / "a.h");
  CHECK_FALSE(inputs_unchanged(*manifest, Environment{}));

  CHECK(inputs_unchanged(*input_manifest({}, now()), Environment{}));
  CHECK_FALSE(inputs_unchanged("", Environment{}));
  CHECK_FALSE(inputs_unchanged("\xa1\x66inputs\x05", Environment{}));  // CBOR {"inputs": 5}
  CHECK_FALSE(inputs_unchanged(std::string("garbage"), Environment{}));
}

TEST_CASE("input_manifest refuses a file changed after the build started, or missing",
          "[unit][input_manifest]") {
  TempDir tmp;
  const struct timespec started = now();
  write_file(tmp / "late.h", "x");  // written after `started`
  fs::last_write_time(tmp / "late.h", fs::file_time_type::clock::now() + std::chrono::hours(1));
  Result<std::string> late = input_manifest({tmp / "late.h"}, started);
  REQUIRE_FALSE(late);
  CHECK(late.why() == tmp / "late.h" + " changed during the build");
  Result<std::string> missing = input_manifest({tmp / "missing.h"}, now());
  REQUIRE_FALSE(missing);
  CHECK(missing.why() == tmp / "missing.h" + " cannot be read");
}

TEST_CASE("rebase_manifest moves the paths under a base, and only those", "[manifest][base-dir]") {
  nlohmann::json m = {
      {"inputs",
       {{"/job1/tree/h.h", 3, 7, "aa"}, {"/job10/h.h", 1, 2, "bb"}, {"/job1", 0, 0, "cc"}}},
      {"absent", {"/job1/tree/x.h", "/usr/include/x.h", "rel/x.h"}},
      {"libraries", {{"/job1/lib/libfoo.a", 10, 20}}},
      {"size", 5},
      {"digest", "dd"}};
  std::optional<std::string> shared =
      kbuild::rebase_manifest(kbuild::to_cbor(m), "/job1", "<base>");
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
  Result<std::string> files = input_manifest({tmp / "a.h"}, now());
  REQUIRE(files);
  nlohmann::json j = *parse_manifest(*files);
  j["absent"] = {tmp / "shadow.h"};
  using Array = nlohmann::json::array_t;  // braces alone would make objects
  j["variables"] = Array{Array{"CPATH", "/x"}, Array{"SECRET_TOKEN", nullptr}};
  j["listed"] = Array{Array{tmp / "listed", "not-the-digest"}};
  Environment env;
  env.set("CPATH", "/x");
  std::optional<ManifestView> view;
  auto stale = [&](const nlohmann::json& manifest) {
    static std::string bytes;  // the view's bytes outlive it
    bytes = to_cbor(manifest);
    view = read_manifest(bytes);
    REQUIRE(view);
    return manifest_stale(*view, env);
  };
  // The listing is checked last: everything before it holds.
  std::optional<StaleInput> s = stale(j);
  REQUIRE(s);
  CHECK(s->kind == StaleKind::listing_changed);
  CHECK(s->what == tmp / "listed");
  j["listed"] = nlohmann::json::array();
  CHECK_FALSE(stale(j));
  CHECK(manifest_holds(*view, env));

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
