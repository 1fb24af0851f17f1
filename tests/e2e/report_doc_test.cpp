// docs/report.md's table is the report's own list of keys: every key of a
// real report (a build that succeeds with --check-load, one whose compile
// fails, an npu dry run with its plugin) is a row, in the report's order;
// every row is a key one of them has; and the keys of each object (at any
// depth) are named in their row. A key added without its row (or a row
// without its key) fails here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;
using ojson = nlohmann::ordered_json;

namespace {

struct DocRow {
  std::string key;
  std::set<std::string> named;  // every `word` of its type and meaning cells
};

// The rows of the table whose header is `| key | type | meaning |`, in order.
std::vector<DocRow> report_table() {
  const std::string doc = read_file(source_root() + "/docs/report.md");
  std::size_t at = doc.find("| key | type | meaning |");
  REQUIRE(at != std::string::npos);
  std::vector<DocRow> rows;
  static const std::regex first(R"(^\| `([a-z_]+)` \|(.*)$)"), tick("`([^`]+)`");
  std::istringstream lines(doc.substr(at));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind('|', 0) != 0) break;
    std::smatch m;
    if (!std::regex_match(line, m, first)) continue;  // the header and its rule
    DocRow row{m[1], {}};
    const std::string rest = m[2];
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), tick);
         it != std::sregex_iterator(); ++it)
      row.named.insert((*it)[1]);
    rows.push_back(row);
  }
  return rows;
}

// Objects whose keys are data, not names of the schema: variable names.
bool keys_are_data(const std::string& key) {
  return key == "environment" || key == "switches" || key == "switches_honoured";
}

// Every key nested in `value` (objects, and objects in arrays), at any depth.
void nested_keys(const ojson& value, std::set<std::string>& out) {
  if (value.is_array())
    for (const ojson& item : value) nested_keys(item, out);
  if (!value.is_object()) return;
  for (const auto& [key, child] : value.items()) {
    out.insert(key);
    if (!keys_are_data(key)) nested_keys(child, out);
  }
}

struct Reports {
  TempDir home, dir;
  std::vector<ojson> all;
  RunResult make(std::vector<std::string> args, const std::string& name,
                 std::map<std::string, std::string> env = {}) {
    args.push_back("--report");
    args.push_back(dir / name);
    RunResult r = run_kbuild(args, home.str(), std::move(env));
    all.push_back(ojson::parse(read_file(dir / name)));
    return r;
  }
};

}  // namespace

TEST_CASE("docs/report.md lists every key a report has, in its order, and none it never has",
          "[e2e][report]") {
  Reports reports;
  write_file(reports.dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  write_file(reports.dir / "bad.cpp", "int broken(\n");
  RunResult ok = reports.make(
      {"--no-torch", "--check-load", reports.dir / "k.cpp", "-o", reports.dir / "k.so"}, "ok.json");
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  RunResult failed = reports.make(
      {"--no-torch", reports.dir / "bad.cpp", "-o", reports.dir / "bad.so"}, "failed.json");
  REQUIRE(failed.exit_code == 5);
  RunResult npu = reports.make({"--device", "npu", "--dry-run", "--no-torch", reports.dir / "k.cpp",
                                "-o", reports.dir / "npu.so"},
                               "npu.json", {{"ASCEND_HOME_PATH", reports.dir.str()}});
  INFO(npu.err);
  REQUIRE(npu.exit_code == 0);
  // An HTTP remote cache nothing answers: a miss and a warning, and the
  // report's remote_cache.
  RunResult remote =
      reports.make({"--no-torch", reports.dir / "k.cpp", "-o", reports.dir / "remote.so"},
                   "remote.json", {{"KBUILD_REMOTE_CACHE", "http://127.0.0.1:1/cache"}});
  INFO(remote.err);
  REQUIRE(remote.exit_code == 0);
  CHECK(reports.all[3]["remote_cache"]["leases"] == false);
  // What each report is here for: the parts only some builds have.
  CHECK(reports.all[0].contains("load_check"));
  CHECK(reports.all[1].contains("failure_analysis"));
  CHECK(reports.all[1].contains("compiler_run"));
  REQUIRE(reports.all[2]["versions"]["plugins"].size() == 1);

  const std::vector<DocRow> rows = report_table();
  REQUIRE(rows.size() >= 20);
  std::vector<std::string> doc_order;
  for (const DocRow& row : rows) doc_order.push_back(row.key);
  std::set<std::string> had;
  for (const ojson& report : reports.all) {
    // Its keys are rows, in the table's order.
    std::size_t next = 0;
    for (const auto& [key, value] : report.items()) {
      INFO("the report's key " << key);
      had.insert(key);
      auto row = std::find(doc_order.begin(), doc_order.end(), key);
      REQUIRE(row != doc_order.end());  // a key the table does not have: add its row
      const std::size_t at = static_cast<std::size_t>(row - doc_order.begin());
      CHECK(at >= next);  // the table's order is the report's
      next = at + 1;
      if (keys_are_data(key)) continue;
      std::set<std::string> inner;
      nested_keys(value, inner);
      for (const std::string& name : inner) {
        INFO("its key " << name << " is not named in the row of " << key);
        CHECK(rows[at].named.count(name) == 1);
      }
    }
  }
  for (const std::string& key : doc_order) {
    INFO("docs/report.md has a row for " << key << ", which no report has");
    CHECK(had.count(key) == 1);
  }
}
