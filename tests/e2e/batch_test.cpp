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
  CHECK(r.out.find("2 built, 1 failed, 0 skipped") != std::string::npos);
  CHECK(r.err.find("== broken (compile, exit 5):") != std::string::npos);
  CHECK(r.err.find("kbuild: error[compile]") != std::string::npos);
  CHECK(fs::exists(b.dir / "k2.so"));
  fs::remove(b.dir / "k2.so");
  RunResult ff =
      run_kbuild({"build-many", b.dir / "m.json", "-j", "1", "--fail-fast"}, b.home.str());
  CHECK(ff.exit_code == 13);
  CHECK(ff.out.find("0 built, 1 failed, 2 skipped") != std::string::npos);
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
