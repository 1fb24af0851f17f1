// The compilation database: one entry per (file, output), written absolute,
// updated atomically under a lock; a database that is not one is left alone.
#include "run/compile_commands.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;
using json = nlohmann::json;

namespace {

json database(const std::string& path) {
  return json::parse(read_file(path));
}

Step command_step(Strings argv, std::size_t output_index, bool links, std::string source = "") {
  Step s;
  s.argv = std::move(argv);
  s.output_index = output_index;
  s.links = links;
  s.source = std::move(source);
  return s;
}

Step load_check_step() {
  Step s;
  s.kind = StepKind::load_check;
  s.comment = "load check";
  return s;
}

}  // namespace

TEST_CASE("entries are absolute, one per source, and replaced however spelled",
          "[unit][compile_commands]") {
  TempDir tmp;
  const std::string db = tmp / "compile_commands.json";
  const Strings argv{"g++", "a.cpp", "b.cpp", "-shared", "-o", "k.so"};
  auto u = update_compile_commands(db, "/w", argv, {"a.cpp", "./b.cpp"}, "k.so");
  REQUIRE(u);
  CHECK(u->left_alone.empty());
  json d = database(db);
  REQUIRE(d.size() == 2);
  CHECK(
      d[0] ==
      json{{"directory", "/w"}, {"arguments", argv}, {"file", "/w/a.cpp"}, {"output", "/w/k.so"}});
  CHECK(d[1]["file"] == "/w/b.cpp");

  const Strings again{"g++", "-O2", "a.cpp", "-o", "k.so"};
  REQUIRE(
      update_compile_commands(db, "/w/sub", again, {"../a.cpp"}, "/w/k.so")->left_alone.empty());
  d = database(db);
  REQUIRE(d.size() == 2);
  CHECK(d[0]["arguments"] == again);
  CHECK(d[0]["directory"] == "/w/sub");
  // Another output of the same source is another entry.
  REQUIRE(update_compile_commands(db, "/w", argv, {"a.cpp"}, "other.so")->left_alone.empty());
  CHECK(database(db).size() == 3);
}

TEST_CASE("duplicates an earlier run left are folded into one entry", "[unit][compile_commands]") {
  TempDir tmp;
  const std::string db = tmp / "cc.json";
  json entry{{"directory", "/w"}, {"arguments", {"g++"}}, {"file", "k.cpp"}, {"output", "k.so"}};
  json keep{{"directory", "/x"}, {"command", "cc x.c"}, {"file", "x.c"}};
  write_file(db, json::array({entry, keep, entry}).dump());
  REQUIRE(update_compile_commands(db, "/w", {"g++", "-O3"}, {"k.cpp"}, "k.so")->left_alone.empty());
  json d = database(db);
  REQUIRE(d.size() == 2);
  CHECK(d[0]["arguments"] == json{"g++", "-O3"});
  CHECK(d[1] == keep);  // someone else's entry, untouched
}

TEST_CASE("a database that is not one is foreign: left as it is", "[unit][compile_commands]") {
  TempDir tmp;
  for (const std::string& text :
       {std::string("{not json"), std::string("{\"a\": 1}"), std::string("[1]"),
        std::string("[{\"file\": 3}]"), std::string("[{\"file\": \"a\", \"output\": 1}]")}) {
    write_file(tmp / "cc.json", text);
    auto u = update_compile_commands(tmp / "cc.json", "/w", {"g++"}, {"k.cpp"}, "k.so");
    REQUIRE(u);
    CHECK(u->left_alone.find(tmp / "cc.json") == 0);
    CHECK(u->left_alone.find("left as it is") != std::string::npos);
    CHECK(read_file(tmp / "cc.json") == text);
  }
  write_file(tmp / "empty.json", "");
  CHECK(update_compile_commands(tmp / "empty.json", "/w", {"g++"}, {"k.cpp"}, "k.so")
            ->left_alone.empty());
  CHECK(database(tmp / "empty.json").size() == 1);
}

TEST_CASE("a symlinked database is updated in its target; a FIFO is refused",
          "[unit][compile_commands]") {
  TempDir tmp;
  fs::create_directory(tmp / "real");
  write_file(tmp / "real/cc.json", "[]");
  fs::create_symlink(tmp / "real/cc.json", tmp / "cc.json");
  REQUIRE(update_compile_commands(tmp / "cc.json", "/w", {"g++"}, {"k.cpp"}, "k.so")
              ->left_alone.empty());
  CHECK(fs::is_symlink(tmp / "cc.json"));
  CHECK(database(tmp / "real/cc.json").size() == 1);

  ::mkfifo((tmp / "fifo.json").c_str(), 0600);
  auto fifo = update_compile_commands(tmp / "fifo.json", "/w", {"g++"}, {"k.cpp"}, "k.so");
  REQUIRE_FALSE(fifo);
  CHECK(fifo.why().find("is not a regular file") != std::string::npos);
  CHECK(fs::is_fifo(tmp / "fifo.json"));

  fs::create_symlink(tmp / "nowhere/cc.json", tmp / "dangling.json");
  auto dangling = update_compile_commands(tmp / "dangling.json", "/w", {"g++"}, {"k.cpp"}, "k.so");
  REQUIRE_FALSE(dangling);
  CHECK(dangling.why().find("is a symlink that cannot be followed") != std::string::npos);
}

TEST_CASE("the lock file is never opened through a link", "[unit][compile_commands]") {
  TempDir tmp;
  // Someone who could write the directory points the lock elsewhere.
  fs::create_symlink(tmp / "victim", tmp / "cc.json.lock");
  auto u = update_compile_commands(tmp / "cc.json", "/w", {"g++"}, {"k.cpp"}, "k.so");
  CHECK_FALSE(fs::exists(tmp / "victim"));
  REQUIRE_FALSE(u);
  CHECK(u.why().find("cannot lock " + tmp / "cc.json.lock") == 0);
  CHECK_FALSE(fs::exists(tmp / "cc.json"));
}

TEST_CASE("record_compile_commands: a plain build's command, checked for loading too",
          "[unit][compile_commands]") {
  TempDir tmp;
  const Strings argv{"g++", "k.cpp", "-shared", "-o", "k.so"};
  std::vector<Step> steps{command_step(argv, 4, true), load_check_step()};
  REQUIRE(record_compile_commands(tmp / "cc.json", steps, {"k.cpp"}));
  json d = database(tmp / "cc.json");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["arguments"] == argv);
  CHECK(d[0]["file"] == (fs::current_path() / "k.cpp").string());
  CHECK(d[0]["output"] == (fs::current_path() / "k.so").string());
}

TEST_CASE("record_compile_commands: each split compile step, never the link",
          "[unit][compile_commands]") {
  TempDir tmp;
  std::vector<Step> steps{
      command_step({"ccache", "g++", "-c", "a.cpp", "-o", "k.so.0-a.o"}, 5, false, "a.cpp"),
      command_step({"ccache", "g++", "-c", "b.cpp", "-o", "k.so.1-b.o"}, 5, false, "b.cpp"),
      command_step({"g++", "k.so.0-a.o", "k.so.1-b.o", "-shared", "-o", "k.so"}, 5, true),
      load_check_step()};
  REQUIRE(record_compile_commands(tmp / "cc.json", steps, {"a.cpp", "b.cpp"}));
  json d = database(tmp / "cc.json");
  REQUIRE(d.size() == 2);
  CHECK(d[0]["arguments"][0] == "ccache");
  CHECK(d[1]["output"] == (fs::current_path() / "k.so.1-b.o").string());
}

TEST_CASE("record_compile_commands: a foreign database is returned, an unwritable one thrown",
          "[unit][compile_commands]") {
  TempDir tmp;
  std::vector<Step> steps{command_step({"g++", "k.cpp", "-o", "k.so"}, 3, true)};
  write_file(tmp / "cc.json", "{}");
  Status foreign = record_compile_commands(tmp / "cc.json", steps, {"k.cpp"});
  REQUIRE_FALSE(foreign);
  CHECK(foreign.kind() == ErrorKind::output);
  CHECK(foreign.why().rfind("--compile-commands: ", 0) == 0);
  CHECK(foreign.why().find("is not a JSON array; left as it is") != std::string::npos);
  CHECK(foreign.error().kind() == ErrorKind::output);
  fs::create_directory(tmp / "dir.json");
  CHECK_THROWS_AS((void)record_compile_commands(tmp / "dir.json", steps, {"k.cpp"}), Error);
}
