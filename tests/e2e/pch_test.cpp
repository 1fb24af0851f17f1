// --pch: the header is precompiled once per (content, flags, compiler),
// reused by other kernels, and rebuilt when anything it reads changes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {
struct PchCase {
  TempDir home, dir;
  PchCase() {
    write_file(dir / "inner.h", "#pragma once\nconstexpr int kInner = 40;\n");
    write_file(dir / "prefix.h",
               "#pragma once\n#include <vector>\n#include \"" + dir / "inner.h" + "\"\n");
    write_file(dir / "a.cpp",
               "extern \"C\" int a() { return kInner + std::vector<int>{1, 2}.size(); }\n");
    write_file(dir / "b.cpp", "extern \"C\" int b() { return kInner; }\n");
  }
  RunResult build(const std::string& src, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--no-torch", "--no-cache",     "-v",
                                  "--pch",      dir / "prefix.h", dir / src};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_kbuild(args, home.str());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r;
  }
  static bool built(const RunResult& r) {
    return r.err.find("kbuild: info: pch: built ") != std::string::npos;
  }
  static bool reused(const RunResult& r) {
    return r.err.find("kbuild: info: pch: reused ") != std::string::npos;
  }
};
}  // namespace

TEST_CASE("--pch builds the header once and other kernels reuse it", "[e2e][pch]") {
  PchCase c;
  RunResult first = c.build("a.cpp");
  CHECK(PchCase::built(first));
  CHECK(first.err.find("-include " + c.home / ".cache/kbuild/pch/") != std::string::npos);
  RunResult second = c.build("b.cpp");
  CHECK(PchCase::reused(second));
  CHECK(fs::exists(c.dir / "a.so"));
  CHECK(fs::exists(c.dir / "b.so"));
  bool gch = false;
  for (auto& e : fs::directory_iterator(c.home / ".cache/kbuild/pch"))
    gch = gch || e.path().extension() == ".gch";
  CHECK(gch);
}

TEST_CASE("--pch is rebuilt when a header it reads changes, or the flags do", "[e2e][pch]") {
  PchCase c;
  c.build("a.cpp");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(c.dir / "inner.h", "#pragma once\nconstexpr int kInner = 41;\n");
  CHECK(PchCase::built(c.build("b.cpp")));  // never the stale one
  CHECK(PchCase::reused(c.build("a.cpp")));
  CHECK(PchCase::built(c.build("a.cpp", {"-D", "NEW_FLAG=1"})));  // other flags, other .gch
}

TEST_CASE("--pch of a header that does not compile is a compile error", "[e2e][pch]") {
  PchCase c;
  write_file(c.dir / "bad.h", "#pragma once\nint broken(\n");
  RunResult r = run_kbuild({"--no-torch", "--pch", c.dir / "bad.h", c.dir / "a.cpp"}, c.home.str());
  CHECK(r.exit_code == 5);
  CHECK_FALSE(fs::exists(c.dir / "a.so"));
  RunResult both = run_kbuild(
      {"--no-torch", "--pch", c.dir / "prefix.h", "--include-pch", "x.h", c.dir / "a.cpp"},
      c.home.str());
  CHECK(both.exit_code == 2);
}

TEST_CASE("with a remote cache, a dry run prints the PCH steps the build then runs", "[e2e][pch]") {
  PchCase c;
  c.build("a.cpp");  // without a remote cache: its record names no shared key
  // A server that refuses at once: the build goes on without it.
  const std::vector<std::string> args{"--no-torch", "--remote-cache",   "redis://127.0.0.1:1",
                                      "--pch",      c.dir / "prefix.h", c.dir / "b.cpp"};
  std::vector<std::string> dry_args = args;
  dry_args.push_back("--dry-run");
  RunResult dry = run_kbuild(dry_args, c.home.str());
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  std::vector<std::string> build_args = args;
  build_args.insert(build_args.end(), {"--report", c.dir / "report.json"});
  RunResult built = run_kbuild(build_args, c.home.str());
  INFO(built.err);
  REQUIRE(built.exit_code == 0);
  std::string steps;
  const nlohmann::json report = nlohmann::json::parse(read_file(c.dir / "report.json"));
  for (const auto& line : report.at("steps")) steps += line.get<std::string>() + "\n";
  CHECK(dry.out == steps);
}
