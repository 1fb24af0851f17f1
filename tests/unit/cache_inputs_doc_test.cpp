// docs/cache.md's table of what the compiler reads is the key's own list:
// the environment row names exactly the variables the key reads, and every
// file form the "response files" and "files the linker reads" rows name is
// a file whose bytes change the key. A row edited without the code (or the
// code without the row) fails here.
#include <catch2/catch.hpp>
#include <regex>
#include <set>

#include "../support/test_support.hpp"
#include "run/output_cache.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {

// The table row of docs/cache.md whose first cell starts with `start`.
std::string row(const std::string& start) {
  const std::string doc = read_file(source_root() + "/docs/cache.md");
  const std::string at = "| " + start;
  const std::size_t from = doc.find(at);
  REQUIRE(from != std::string::npos);
  return doc.substr(from, doc.find('\n', from) - from);
}

// The backticked words of the row's first cell.
std::vector<std::string> quoted(const std::string& row_text) {
  const std::string cell = row_text.substr(0, row_text.find(" | "));
  std::vector<std::string> words;
  static const std::regex tick("`([^`]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), tick); it != std::sregex_iterator();
       ++it)
    words.push_back((*it)[1]);
  return words;
}

// How each form the doc names is written on a command line (FILE: the file).
const std::map<std::string, std::vector<std::string>>& forms() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"@file", {"@FILE"}},
      {"-specs=", {"-specs=FILE"}},
      {"-fplugin=", {"-fplugin=FILE"}},
      {"-T script", {"-T", "FILE"}},
      {"-Wl,-T,...", {"-Wl,-T,FILE"}},
      {"-Wl,--script=", {"-Wl,--script=FILE"}},
      {"-Wl,--version-script=", {"-Wl,--version-script=FILE"}},
      {",FILE", {"-Wl,--version-script,FILE"}},
      {"-Wl,--dynamic-list=", {"-Wl,--dynamic-list=FILE"}},
      {"-Wl,@file", {"-Wl,@FILE"}},
      {"-Xlinker", {"-Xlinker", "--version-script=FILE"}},
  };
  return table;
}

}  // namespace

TEST_CASE("the environment row of docs/cache.md is the list of variables the key reads",
          "[unit][cache][docs]") {
  std::vector<std::string> named = quoted(row("the environment:"));
  std::set<std::string> doc(named.begin(), named.end());
  std::set<std::string> code(std::begin(kCompilerVariables), std::end(kCompilerVariables));
  code.insert("PATH");  // the local key's addition (cache_key)
  CHECK(doc == code);
}

TEST_CASE("every file form docs/cache.md says the key reads changes the key with its bytes",
          "[unit][cache][docs]") {
  TempDir tmp;
  write_file(tmp / "k.cpp", "int f() { return 1; }\n");
  const std::string file = tmp / "named.txt";
  std::vector<std::string> rows = quoted(row("response files"));
  for (const std::string& w : quoted(row("files the linker reads"))) rows.push_back(w);
  REQUIRE(rows.size() >= 10);
  for (const std::string& form : rows) {
    INFO("docs/cache.md names " << form);
    auto it = forms().find(form);
    REQUIRE(it != forms().end());  // a form this test does not know: add it to forms()
    KeyInput in;
    in.argv = {"/usr/bin/g++", tmp / "k.cpp", "-shared", "-o", tmp / "k.so"};
    in.output_index = 4;
    in.output = tmp / "k.so";
    in.sources = {tmp / "k.cpp"};
    in.programs = {"/usr/bin/g++"};
    for (std::string w : it->second) {
      if (std::size_t at = w.find("FILE"); at != std::string::npos) w.replace(at, 4, file);
      in.argv.push_back(w);
    }
    // A response file's words are read too: one that names nothing else.
    write_file(file, "-DONE\n");
    std::vector<std::string> files = named_files(in.argv);
    CHECK(std::find(files.begin(), files.end(), file) != files.end());
    auto before = cache_key(in, Environment{});
    write_file(file, "-DTWO\n");
    auto after = cache_key(in, Environment{});
    REQUIRE(before);
    REQUIRE(after);
    CHECK(before->hex != after->hex);
  }
}
