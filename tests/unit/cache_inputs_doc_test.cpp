// docs/cache.md's table of what a build reads is kept true by code: the
// variables it says are read but are not inputs (they only shape how
// diagnostics look or how many jobs run) are exactly the list the manifest
// leaves out. A row edited without the code (or the code without the row)
// fails here.
#include <catch2/catch.hpp>
#include <regex>
#include <set>

#include "../support/test_support.hpp"
#include "run/input_manifest.hpp"

using namespace kbuild;
using namespace kbuild_test;

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
