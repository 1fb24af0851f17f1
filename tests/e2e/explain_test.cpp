// `kbuild explain --json`: the command that would run, each of its flags
// with the list, layer, provider and device file:line that added it, and
// what finalize dropped, as JSON a script can read.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;
using nlohmann::json;

namespace {

// The flag of `flags` whose words are `words` (null when there is none).
const json* flag_with(const json& flags, const std::vector<std::string>& words) {
  for (const json& f : flags)
    if (f["words"].get<std::vector<std::string>>() == words) return &f;
  return nullptr;
}

// Whether `words` stand together, in order, in `argv`.
bool contiguous_in(const std::vector<std::string>& argv, const std::vector<std::string>& words) {
  return std::search(argv.begin(), argv.end(), words.begin(), words.end()) != argv.end();
}

}  // namespace

TEST_CASE("explain --json: the argv, and each flag's list, layer, provider, file and line",
          "[e2e][explain]") {
  TempDir home, dir;
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  // Line 2 adds a definition; line 3 an include dir twice (the second is dropped).
  write_file(dir / "acc.json",
             "{\"device\": \"acc\",\n"
             " \"definitions\": [\"ACC_ON\"],\n"
             " \"include_dirs\": [\"/opt/acc/include\", \"/opt/acc/include\"]}\n");
  RunResult r = run_kbuild(
      {"explain", "--json", "--no-torch", "--isa", "none", "--cxx", "g++", "--config",
       dir / "acc.json", "--device", "acc", dir / "k.cpp", "-o", dir / "k.so", "-D", "X=1"},
      home.str());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(r.out);
  CHECK(out["schema"] == "kbuild-explain/1");
  const auto argv = out["argv"].get<std::vector<std::string>>();
  REQUIRE(argv.size() > 4);
  CHECK(argv.front() == "g++");
  CHECK(contiguous_in(argv, {"-o", dir / "k.so"}));
  CHECK(out["output"] == dir / "k.so");
  REQUIRE(out["steps"].size() == 1);  // a plain build: Inductor's one command
  CHECK(out["steps"][0]["kind"] == "command");
  CHECK(out["steps"][0]["argv"] == out["argv"]);

  const json& flags = out["flags"];
  REQUIRE(flags.size() > 3);
  for (const json& f : flags) {  // each is words of the command line, in the command
    INFO(f.dump());
    CHECK(contiguous_in(argv, f["words"].get<std::vector<std::string>>()));
  }
  const json* acc = flag_with(flags, {"-D", "ACC_ON"});
  REQUIRE(acc);
  CHECK((*acc)["list"] == "definitions");
  CHECK((*acc)["layer"] == "device");
  CHECK((*acc)["provider"] == "config acc");
  CHECK((*acc)["file"] == dir / "acc.json");
  CHECK((*acc)["line"] == 2);
  const json* user = flag_with(flags, {"-D", "X=1"});
  REQUIRE(user);
  CHECK((*user)["layer"] == "user");
  CHECK((*user)["file"].is_null());
  CHECK((*user)["line"].is_null());
  const json* o3 = flag_with(flags, {"-O3"});  // from the Inductor profile, file:line
  REQUIRE(o3);
  CHECK((*o3)["layer"] == "base");
  CHECK((*o3)["list"] == "cflags");
  CHECK((*o3)["file"].get<std::string>().find("/configs/profiles/") != std::string::npos);
  CHECK((*o3)["line"].get<int>() > 0);

  REQUIRE(out["dropped"].size() == 1);
  const json& dropped = out["dropped"][0];
  CHECK(dropped["words"] == json::array({"-I/opt/acc/include"}));
  CHECK(dropped["list"] == "include_dirs");
  CHECK(dropped["line"] == 3);
  CHECK(dropped["reason"].get<std::string>().find("duplicate") != std::string::npos);
  CHECK(out["torch_layer"] == false);
  CHECK(out["no_torch_layer"] == "--no-torch was given");

  // The text says the same facts: the device file's line beside its flag.
  RunResult text = run_kbuild(
      {"explain", "--no-torch", "--isa", "none", "--cxx", "g++", "--config", dir / "acc.json",
       "--device", "acc", dir / "k.cpp", "-o", dir / "k.so", "-D", "X=1"},
      home.str());
  REQUIRE(text.exit_code == 0);
  CHECK(std::regex_search(
      text.out, std::regex("\n-D ACC_ON +device +config acc +" + dir.str() + "/acc.json:2\n")));
  // The rows are in the command's order, in aligned columns.
  std::vector<std::string> rows;
  std::istringstream lines(text.out.substr(text.out.find("\nflag ") + 1));
  for (std::string line; std::getline(lines, line) && !line.empty();) rows.push_back(line);
  REQUIRE(rows.size() > 3);
  const std::size_t layer = rows[0].find("layer"), provider = rows[0].find("provider"),
                    where = rows[0].find("file:line");
  for (const std::string& row : rows) {
    INFO(row);
    CHECK(row[layer - 1] == ' ');
    CHECK(row[layer] != ' ');
    CHECK(row[provider - 1] == ' ');
    CHECK(row[provider] != ' ');
    if (row.size() > where) CHECK(row[where] != ' ');
  }
  const std::vector<std::string> command = out["argv"].get<std::vector<std::string>>();
  std::size_t last = 0;
  for (const json& f : out["flags"]) {
    const auto words = f["words"].get<std::vector<std::string>>();
    const std::size_t at = static_cast<std::size_t>(
        std::search(command.begin(), command.end(), words.begin(), words.end()) - command.begin());
    INFO(f.dump());
    CHECK(at >= last);
    last = at;
  }
  CHECK(text.out.find("\nno torch layer: --no-torch was given\n") != std::string::npos);
}

TEST_CASE("explain without a source is refused, naming what it needs", "[e2e][explain]") {
  TempDir home;
  RunResult r = run_kbuild({"explain", "--no-torch"}, home.str());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("kbuild: error[usage]: explain needs a source") != std::string::npos);
  CHECK(r.err.find("kernel.cpp") == std::string::npos);
}
