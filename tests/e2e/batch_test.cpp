// build-many: a manifest of builds run N at a time, a summary, and a
// non-zero exit when any failed.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {
// prefix + i + suffix (appended: g++ 12 warns falsely on "lit" + std::string chains).
std::string numbered(const std::string& prefix, int i, const char* suffix = "") {
  std::string s = prefix;
  s += std::to_string(i);
  s += suffix;
  return s;
}

struct Batch {
  TempDir home, dir;
  Batch() {
    for (int i = 0; i < 6; ++i) {
      std::string name = "k";
      name += std::to_string(i);
      write_file(dir / (name + ".cpp"), "extern \"C\" int f() { return 7; }\n");
    }
    write_file(dir / "bad.cpp", "int broken(\n");
  }
};
}  // namespace

TEST_CASE("build-many builds every entry in parallel and prints a summary", "[e2e][batch]") {
  Batch b;
  std::string builds;
  for (int i = 0; i < 6; ++i) {
    std::string k = numbered(b.dir / "k", i);
    builds += std::string(i ? ", " : "") + "[\"" + k + ".cpp\", \"-o\", \"" + k + ".so\"]";
  }
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [" + builds + "]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "-j", "2"}, b.home.str());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("6 built, 0 failed, 0 skipped, -j 2") != std::string::npos);
  for (int i = 0; i < 6; ++i) CHECK(fs::exists(numbered(b.dir / "k", i, ".so")));
}

TEST_CASE("build-many goes on after a failure by default, and stops with --fail-fast",
          "[e2e][batch]") {
  Batch b;
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [{\"name\": \"broken\", "
             "\"args\": [\"" +
                 b.dir / "bad.cpp" + "\"]}, [\"" + b.dir / "k1.cpp" + "\"], [\"" +
                 b.dir / "k2.cpp" + "\"]]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "-j", "1"}, b.home.str());
  CHECK(r.exit_code == 13);
  CHECK(r.out.find("compile (exit 5)") != std::string::npos);  // the stage, not only the code
  CHECK(r.out.find("2 built, 1 failed (1 compile), 0 skipped") != std::string::npos);
  CHECK(r.err.find("== broken (compile, exit 5):") != std::string::npos);
  CHECK(r.err.find("kbuild: error[compile]") != std::string::npos);
  CHECK(fs::exists(b.dir / "k2.so"));
  fs::remove(b.dir / "k2.so");
  RunResult ff =
      run_kbuild({"build-many", b.dir / "m.json", "-j", "1", "--fail-fast"}, b.home.str());
  CHECK(ff.exit_code == 13);
  CHECK(ff.out.find("0 built, 1 failed (1 compile), 2 skipped") != std::string::npos);
  // Skipped rows name their build too.
  std::istringstream rows(ff.out);
  int skipped_rows = 0;
  for (std::string row; std::getline(rows, row);) {
    if (row.rfind("skipped", 0) != 0) continue;
    ++skipped_rows;
    CHECK(row.find("job ") != std::string::npos);
  }
  CHECK(skipped_rows == 2);
  CHECK_FALSE(fs::exists(b.dir / "k2.so"));
}

TEST_CASE("build-many: --plugin in the common arguments reaches every build, --backend per build",
          "[e2e][batch]") {
  Batch b;
  std::string k0 = b.dir / "k0", k1 = b.dir / "k1";
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\", \"--plugin\", \"npu\"], \"builds\": ["
             "[\"" +
                 k0 + ".cpp\", \"-o\", \"" + k0 + ".so\", \"--report\", \"" + k0 +
                 ".json\"], "
                 "[\"" +
                 k1 + ".cpp\", \"-o\", \"" + k1 + ".so\", \"--report\", \"" + k1 +
                 ".json\", "
                 "\"--backend\", \"mlir\"]]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "-j", "2"}, b.home.str(), {},
                           {"TORCHINDUCTOR_NPU_BACKEND", "DISABLE_AOTI_PATCH"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto argv_of = [](const std::string& report) {
    return nlohmann::json::parse(read_file(report))["argv"].dump();
  };
  // The cpu kernels of a torch_npu process: triton drops -march=native, mlir does not.
  CHECK(argv_of(k0 + ".json").find("-march=native") == std::string::npos);
  CHECK(argv_of(k1 + ".json").find("-march=native") != std::string::npos);
  CHECK(nlohmann::json::parse(read_file(k1 + ".json"))["versions"]["plugins"][0]["backend"] ==
        "mlir");
}

TEST_CASE("build-many shows what a build that succeeds warns about", "[e2e][batch]") {
  Batch b;
  // A cache directory that is not kbuild's: each build warns, then builds
  // without it; the warning must reach the user, not only a failure's.
  write_file(b.dir / "cache/photo.jpg", "mine");
  write_file(b.dir / "m.json", "{\"common\": [\"--no-torch\"], \"builds\": [[\"" +
                                   b.dir / "k1.cpp" + "\", \"-o\", \"" + b.dir / "k1.so" + "\"]]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json"}, b.home.str(),
                           {{"KBUILD_CACHE_DIR", b.dir / "cache"}});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(b.dir / "k1.so"));
  CHECK(r.err.find("== " + b.dir / "k1.so" + " (ok):") != std::string::npos);
  CHECK(r.err.find("kbuild: warning: cache directory " + b.dir / "cache" + " is not kbuild's") !=
        std::string::npos);
  CHECK(r.out.find("1 built, 0 failed, 0 skipped") != std::string::npos);
}

TEST_CASE("a malformed manifest is a config error with its position", "[e2e][batch]") {
  Batch b;
  write_file(b.dir / "m.json", "{\"builds\": [\n  [\"a.cpp\", 3]\n]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json"}, b.home.str());
  CHECK(r.exit_code == 3);
  CHECK(r.err.find(b.dir / "m.json:2:") != std::string::npos);
  CHECK(r.err.find("at /builds/0/1: expected a string") != std::string::npos);
  write_file(b.dir / "m2.json", "{\"jobs\": []}");
  CHECK(
      run_kbuild({"build-many", b.dir / "m2.json"}, b.home.str()).err.find("unknown key 'jobs'") !=
      std::string::npos);
}

TEST_CASE(
    "the largest -j runs no more builds at a time than there are builds; a larger one "
    "is refused",
    "[e2e][batch]") {
  Batch b;
  write_file(b.dir / "m.json", "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [[\"" +
                                   b.dir / "k0.cpp" + "\", \"-o\", \"" + b.dir / "k0.so" +
                                   "\"], [\"" + b.dir / "k1.cpp" + "\", \"-o\", \"" +
                                   b.dir / "k1.so" + "\"]]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "-j", "1024"}, b.home.str());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  RunResult absurd = run_kbuild({"build-many", b.dir / "m.json", "-j", "4000000000"}, b.home.str());
  CHECK(absurd.exit_code == 2);  // never an abort (matrix row E76)
  CHECK(fs::exists(b.dir / "k0.so"));
  CHECK(fs::exists(b.dir / "k1.so"));
}

TEST_CASE("a build-many build's report names the real kbuild, so its command can be run again",
          "[e2e][batch]") {
  Batch b;
  const std::string k0 = b.dir / "k0";
  write_file(b.dir / "m.json", "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [[\"" +
                                   k0 + ".cpp\", \"-o\", \"" + k0 + ".so\", \"--report\", \"" + k0 +
                                   ".json\"]]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json"}, b.home.str());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(read_file(k0 + ".json"));
  const std::vector<std::string> argv = report["kbuild_argv"];
  REQUIRE_FALSE(argv.empty());
  CHECK(argv[0] == fs::canonical(kbuild_binary()).string());
  // Run again as docs/report.md says (in `cwd`, here the same): the same build.
  fs::remove(k0 + ".so");
  RunResult again = run(argv, {{"HOME", b.home.str()}});
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(fs::exists(k0 + ".so"));
}

TEST_CASE("build-many --json: each build's status, stage, seconds and report",
          "[e2e][batch][json]") {
  Batch b;
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [[\"" + b.dir / "k0.cpp" +
                 "\", \"-o\", \"" + b.dir / "k0.so" + "\", \"--report\", \"" + b.dir / "k0.json" +
                 "\"], {\"name\": \"broken\", \"args\": [\"" + b.dir / "bad.cpp" + "\"]}]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "-j", "1", "--json"}, b.home.str());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 13);
  nlohmann::json s = nlohmann::json::parse(r.out);  // stdout is the JSON alone
  CHECK(s["format"] == 1);
  REQUIRE(s["builds"].size() == 2);
  CHECK(s["builds"][0]["name"] == b.dir / "k0.so");
  CHECK(s["builds"][0]["status"] == "ok");
  CHECK(s["builds"][0]["report"] == b.dir / "k0.json");
  CHECK(s["builds"][0]["seconds"].get<double>() > 0);
  CHECK(s["builds"][1]["name"] == "broken");
  CHECK(s["builds"][1]["status"] == "failed");
  CHECK(s["builds"][1]["stage"] == "compile");
  CHECK(s["builds"][1]["exit_code"] == 5);
  CHECK(s["built"] == 1);
  CHECK(s["failed"] == 1);
  CHECK(s["jobs"] == 1);
}

TEST_CASE("build-many --baseline: fixed, new failure, unchanged, deeper; --fail-on regressions",
          "[e2e][batch][baseline]") {
  Batch b;
  const std::string src = b.dir / "src";
  fs::create_directories(src);
  auto kernel = [&](const std::string& name, const std::string& text) {
    write_file(src + "/" + name + ".cpp", text);
  };
  const std::string good = "extern \"C\" int f() { return 7; }\n";
  const std::string broken = "int broken(\n";
  const std::string unresolved =
      "extern \"C\" void g();\nextern \"C\" int f() { g(); return 1; }\n";
  kernel("fix", broken);
  kernel("regress", good);
  kernel("same", broken);
  kernel("deeper", broken);
  std::string builds;
  for (const char* name : {"fix", "regress", "same", "deeper", "absent"})
    builds += std::string(builds.empty() ? "" : ", ") + "{\"name\": \"" + name +
              "\", \"args\": [\"" + src + "/" + name + ".cpp\", \"-o\", \"" + b.dir / name +
              ".so\"]}";
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\", \"--check-load\"], \"builds\": [" +
                 builds + "]}");
  RunResult first = run_kbuild({"build-many", b.dir / "m.json", "--json"}, b.home.str());
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 13);
  write_file(b.dir / "before.json", first.out);
  // The fixes of a day: one fixed, one broken, one now failing at load
  // (its compile fixed), one source written (usage -> compile).
  kernel("fix", good);
  kernel("regress", broken);
  kernel("deeper", unresolved);
  kernel("absent", broken);
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "--baseline", b.dir / "before.json"},
                           b.home.str());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 13);  // failures, as without a baseline
  auto row = [&](const std::string& name) {
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (line.size() > name.size() &&
          line.compare(line.size() - name.size(), name.size(), name) == 0 &&
          line[line.size() - name.size() - 1] == ' ')
        return line;
    return std::string();
  };
  CHECK(row("fix").find("compile  fixed") != std::string::npos);
  CHECK(row("regress").find("ok       new failure") != std::string::npos);
  CHECK(row("same").find("compile  unchanged") != std::string::npos);
  CHECK(row("deeper").find("compile  deeper") != std::string::npos);
  CHECK(row("absent").find("usage    deeper") != std::string::npos);
  CHECK(r.out.find("fixed: 1 fix (compile -> ok)\n") != std::string::npos);
  CHECK(r.out.find("deeper: 2 deeper (compile -> load), absent (usage -> compile)\n") !=
        std::string::npos);
  CHECK(r.out.find("new failure: 1 regress (ok -> compile)\n") != std::string::npos);
  // The header names the columns the rows fill.
  std::string header = r.out.substr(0, r.out.find('\n'));
  CHECK(header.find("status") == 0);
  CHECK(header.find("before") == row("fix").find("compile "));
  // --fail-on regressions: 13 for the new failure; 0 once it is fixed too.
  CHECK(run_kbuild({"build-many", b.dir / "m.json", "--baseline", b.dir / "before.json",
                    "--fail-on", "regressions"},
                   b.home.str())
            .exit_code == 13);
  kernel("regress", good);
  RunResult better = run_kbuild({"build-many", b.dir / "m.json", "--baseline",
                                 b.dir / "before.json", "--fail-on", "regressions", "--json"},
                                b.home.str());
  INFO(better.out);
  CHECK(better.exit_code == 0);
  nlohmann::json s = nlohmann::json::parse(better.out);
  CHECK(s["builds"][1]["before"] == "ok");
  CHECK(s["builds"][1]["migration"] == "unchanged");
  CHECK(s["builds"][3]["migration"] == "deeper");
  // Without a baseline --fail-on regressions is refused; a file that is not
  // a summary names where it is wrong; nothing is built for either.
  fs::remove(b.dir / "fix.so");
  RunResult alone =
      run_kbuild({"build-many", b.dir / "m.json", "--fail-on", "regressions"}, b.home.str());
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("--baseline") != std::string::npos);
  write_file(b.dir / "wrong.json", "{\"format\": 1, \"builds\": [{\"name\": 3}]}");
  RunResult wrong = run_kbuild({"build-many", b.dir / "m.json", "--baseline", b.dir / "wrong.json"},
                               b.home.str());
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.err.find("wrong.json:1:") != std::string::npos);
  CHECK_FALSE(fs::exists(b.dir / "fix.so"));
  // Builds are compared by name: one without a name of its own (no "name",
  // no -o: "job N" is its place in the list) or a name twice is refused.
  write_file(b.dir / "positional.json", "{\"builds\": [[\"" + src + "/fix.cpp\"]]}");
  RunResult positional = run_kbuild(
      {"build-many", b.dir / "positional.json", "--baseline", b.dir / "before.json"}, b.home.str());
  CHECK(positional.exit_code == 2);
  CHECK(positional.err.find("build 1 has neither a \"name\" nor -o") != std::string::npos);
  write_file(b.dir / "twice.json",
             "{\"common\": [\"--no-torch\"], \"builds\": [{\"name\": \"x\", "
             "\"args\": [\"" +
                 src + "/fix.cpp\", \"-o\", \"" + b.dir / "x1.so" +
                 "\"]}, {\"name\": \"x\", \"args\": [\"" + src + "/fix.cpp\", \"-o\", \"" +
                 b.dir / "x2.so\"]}]}");
  RunResult twice = run_kbuild(
      {"build-many", b.dir / "twice.json", "--baseline", b.dir / "before.json"}, b.home.str());
  CHECK(twice.exit_code == 2);
  CHECK(twice.err.find("'x' names two builds") != std::string::npos);
  CHECK_FALSE(fs::exists(b.dir / "x1.so"));
  // A build --fail-fast skipped is not compared: no new failure, no exit 13.
  kernel("fix", broken);
  RunResult fast =
      run_kbuild({"build-many", b.dir / "m.json", "-j", "1", "--fail-fast", "--baseline",
                  b.dir / "before.json", "--fail-on", "regressions", "--json"},
                 b.home.str());
  INFO(fast.out << fast.err);
  nlohmann::json f = nlohmann::json::parse(fast.out);
  CHECK(f["builds"][0]["migration"] == "unchanged");  // fix: compile -> compile
  CHECK(f["builds"][1]["status"] == "skipped");
  CHECK(f["builds"][1]["migration"] == "skipped");
  CHECK(fast.exit_code == 0);
}

TEST_CASE("build-many's table: the header's columns line up with the rows", "[e2e][batch]") {
  Batch b;
  write_file(b.dir / "m.json", "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [[\"" +
                                   b.dir / "k0.cpp" + "\"], {\"name\": \"broken\", \"args\": [\"" +
                                   b.dir / "bad.cpp" + "\"]}]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "-j", "1"}, b.home.str());
  std::istringstream lines(r.out);
  std::string header, ok, failed;
  std::getline(lines, header);
  std::getline(lines, ok);
  std::getline(lines, failed);
  INFO(r.out);
  // "seconds" ends where the numbers end; "build" starts where the names do.
  CHECK(header.find("seconds") + 7 + 2 == failed.find("broken"));
  CHECK(header.find("build") == failed.find("broken"));
  CHECK(header.find("build") == ok.find("job 1"));
}

TEST_CASE("build-many's (ok) sections show a build's warnings on a cache hit too",
          "[e2e][batch][replay]") {
  Batch b;
  // Inductor's flags turn -Wunused-variable off: a warning of the source's own.
  write_file(b.dir / "w.cpp", "#warning kbuild-test-says\nextern \"C\" int f() { return 7; }\n");
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"-v\"], \"builds\": [{\"name\": \"warns\", "
             "\"args\": [\"" +
                 b.dir / "w.cpp" + "\", \"-o\", \"" + b.dir / "w.so" + "\"]}]}");
  for (int i = 0; i < 2; ++i) {
    RunResult r = run_kbuild({"build-many", b.dir / "m.json"}, b.home.str());
    INFO(i << r.out << r.err);
    CHECK(r.exit_code == 0);
    const std::size_t section = r.err.find("== warns (ok):\n");
    REQUIRE(section != std::string::npos);
    CHECK(r.err.find("warning: #warning kbuild-test-says", section) != std::string::npos);
    CHECK((r.err.find("cache: hit", section) != std::string::npos) == (i == 1));
  }
}

TEST_CASE("build-many's summary counts failures by stage, and moves by kind against a baseline",
          "[e2e][batch][json]") {
  Batch b;
  write_file(b.dir / "unresolved.cpp",
             "extern \"C\" void g();\nextern \"C\" int f() { g(); return 1; }\n");
  auto build = [&](const std::string& name, const std::string& source) {
    return "{\"name\": \"" + name + "\", \"args\": [\"" + b.dir / source + "\", \"-o\", \"" +
           b.dir / name + ".so\"]}";
  };
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\", \"--check-load\"], "
             "\"builds\": [" +
                 build("good", "k0.cpp") + ", " + build("bad1", "bad.cpp") + ", " +
                 build("bad2", "bad.cpp") + ", " + build("load", "unresolved.cpp") + "]}");
  RunResult r = run_kbuild({"build-many", b.dir / "m.json", "--json"}, b.home.str());
  INFO(r.out << r.err);
  nlohmann::json s = nlohmann::json::parse(r.out);
  CHECK(s["failed_by_stage"] == nlohmann::json({{"compile", 2}, {"load", 1}}));
  CHECK(s.dump().find("\"failed_by_stage\":{\"compile\":2,\"load\":1}") != std::string::npos);
  CHECK_FALSE(s.contains("migrations"));  // no baseline
  RunResult text = run_kbuild({"build-many", b.dir / "m.json"}, b.home.str());
  CHECK(text.out.find("1 built, 3 failed (2 compile, 1 load), 0 skipped") != std::string::npos);
  write_file(b.dir / "before.json", r.out);
  write_file(b.dir / "bad.cpp", "extern \"C\" int f() { return 7; }\n");
  RunResult again =
      run_kbuild({"build-many", b.dir / "m.json", "--json", "--baseline", b.dir / "before.json"},
                 b.home.str());
  nlohmann::json moves = nlohmann::json::parse(again.out)["migrations"];
  CHECK(moves["fixed"] == 2);
  CHECK(moves["unchanged"] == 2);
  CHECK(moves["new failure"] == 0);
  CHECK(moves.size() == 9);  // every kind, 0 included
  // docs/build-many.md has a row for every key of the summary, and every word.
  const std::string doc = read_file(source_root() + "/docs/build-many.md");
  nlohmann::json summary = nlohmann::json::parse(again.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : summary.items()) keys.push_back(key);
  for (const auto& [key, value] : summary["builds"][0].items()) keys.push_back(key);
  for (const std::string& key : keys) {
    INFO(key);
    CHECK(doc.find("| `" + key + "` |") != std::string::npos);
  }
  for (const auto& [word, count] : moves.items()) {
    INFO(word);
    CHECK(doc.find("| `" + word + "` |") != std::string::npos);
  }
}

TEST_CASE("build-many --baseline-missing=empty: the first night compares with nothing, said",
          "[e2e][batch][baseline]") {
  Batch b;
  write_file(b.dir / "m.json",
             "{\"common\": [\"--no-torch\", \"--no-cache\"], \"builds\": [{\"name\": \"good\", "
             "\"args\": [\"" +
                 b.dir / "k0.cpp" + "\"]}, {\"name\": \"bad\", \"args\": [\"" + b.dir / "bad.cpp" +
                 "\"]}]}");
  const std::string night = b.dir / "nightly.json";
  // Without the option a missing baseline is an error, which says the way through.
  RunResult refused =
      run_kbuild({"build-many", b.dir / "m.json", "--baseline", night}, b.home.str());
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("--baseline-missing=empty") != std::string::npos);
  RunResult first = run_kbuild({"build-many", b.dir / "m.json", "--json", "--baseline", night,
                                "--baseline-missing=empty", "--fail-on", "regressions"},
                               b.home.str());
  INFO(first.out << first.err);
  CHECK(first.exit_code == 13);  // "bad" is a new failure
  CHECK(first.err.find("note: --baseline " + night +
                       " does not exist: compared with an empty "
                       "baseline") != std::string::npos);
  nlohmann::json s = nlohmann::json::parse(first.out);
  CHECK(s["builds"][0]["migration"] == "added");
  CHECK(s["builds"][1]["migration"] == "new failure");
  CHECK(s["migrations"]["added"] == 1);
  // The next night the saved summary is the baseline: nothing new, exit 0.
  write_file(night, first.out);
  RunResult second = run_kbuild({"build-many", b.dir / "m.json", "--baseline", night,
                                 "--baseline-missing=empty", "--fail-on", "regressions"},
                                b.home.str());
  CHECK(second.exit_code == 0);
  CHECK(second.err.find("does not exist") == std::string::npos);
  // A baseline that exists and is wrong is still an error; the option alone is refused.
  write_file(night, "{}");
  CHECK(
      run_kbuild({"build-many", b.dir / "m.json", "--baseline", night, "--baseline-missing=empty"},
                 b.home.str())
          .exit_code == 2);
  RunResult alone =
      run_kbuild({"build-many", b.dir / "m.json", "--baseline-missing=empty"}, b.home.str());
  CHECK(alone.exit_code == 2);
  CHECK(alone.err.find("give --baseline PREVIOUS.json too") != std::string::npos);
}
