// One plan, then run it: --dry-run prints every step a cache miss runs (the
// PCH step, each compile through a launcher, the local link, the load
// check), and a build runs exactly those. Fake programs record what ran.
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

using Strings = std::vector<std::string>;

// A program that appends its argv ($0 first) as one record to `log`, then
// runs the rest of its arguments (a launcher) or g++ (a compiler).
void recorder(const std::string& path, const std::string& log, bool launcher,
              const std::string& extra = "") {
  write_file(path,
             "#!/bin/sh\n{ printf '%s\\0' \"$0\"; for a in \"$@\"; do printf '%s\\0' \"$a\"; done; "
             "printf 'END\\0'; } >> \"" +
                 log + "\"\n" + extra + (launcher ? "exec \"$@\"\n" : "exec /usr/bin/g++ \"$@\"\n"),
             true);
}

// kbuild's questions to the compiler (its search dirs, what -march=native
// means) are not build steps.
bool is_question(const Strings& argv) {
  for (const std::string& w : argv)
    if (w == "-print-search-dirs" || w == "-###" || w == "/dev/null") return true;
  return false;
}

std::vector<Strings> records(const std::string& log) {
  std::vector<Strings> out(1);
  std::string text = read_file(log), word;
  for (char c : text) {
    if (c != '\0') {
      word += c;
      continue;
    }
    if (word == "END") {
      out.emplace_back();
    } else {
      out.back().push_back(word);
    }
    word.clear();
  }
  out.pop_back();
  std::vector<Strings> steps;
  for (Strings& r : out)
    if (!is_question(r)) steps.push_back(std::move(r));
  return steps;
}

Strings split_lines(const std::string& text) {
  Strings lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The printed line split as a POSIX shell does.
Strings shell_words(const std::string& line) {
  RunResult r = run({"/bin/sh", "-c", "for a in " + line + "; do printf '%s\\0' \"$a\"; done"});
  REQUIRE(r.exit_code == 0);
  Strings words;
  std::string word;
  for (char c : r.out) {
    if (c == '\0') {
      words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return words;
}

// Equal, except that a file the build writes for itself runs in its private
// work directory (".NAME.kbuild-tmp.PID.N/") beside where it was planned.
bool same_step(const Strings& planned, const Strings& ran) {
  if (planned.size() != ran.size()) return false;
  for (std::size_t i = 0; i < planned.size(); ++i) {
    if (planned[i] == ran[i]) continue;
    fs::path p(planned[i]), r(ran[i]);
    if (p.filename() == r.filename() && r.parent_path().parent_path() == p.parent_path() &&
        r.parent_path().filename().string().find(".kbuild-tmp.") != std::string::npos)
      continue;
    return false;
  }
  return true;
}

struct PlanCase {
  TempDir home, dir;
  std::string log = dir / "ran.log";
  std::string cxx = dir / "bin/g++";
  PlanCase() {
    recorder(cxx, log, false);
    write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  }
  RunResult kbuild(Strings args) {
    Strings all{"--no-torch", "--cxx", cxx, dir / "k.cpp", "-o", dir / "k.so"};
    all.insert(all.end(), args.begin(), args.end());
    return run_kbuild(all, home.str());
  }
  // Runs the dry run, then the build; checks the printed commands ran, in order.
  void check_plan_runs(const Strings& args, std::size_t expected_commands) {
    RunResult dry = kbuild([&] {
      Strings a = args;
      a.push_back("--dry-run");
      return a;
    }());
    INFO(dry.err);
    REQUIRE(dry.exit_code == 0);
    CHECK(records(log).empty());  // a dry run runs nothing
    Strings commands;
    for (const std::string& line : split_lines(dry.out))
      if (line.rfind("#", 0) != 0) commands.push_back(line);
    INFO(dry.out);
    REQUIRE(commands.size() == expected_commands);
    fs::remove(log);
    RunResult built = kbuild(args);
    INFO(built.err);
    REQUIRE(built.exit_code == 0);
    // What the outermost programs ran: a launcher's record, or the
    // compiler's own when no launcher ran it.
    std::vector<Strings> ran;
    bool inside_launcher = false;
    for (const Strings& r : records(log)) {
      if (inside_launcher) {
        inside_launcher = false;  // the compiler the launcher ran
        continue;
      }
      ran.push_back(r);
      inside_launcher = r[0] != cxx;
    }
    REQUIRE(ran.size() == commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) {
      INFO("step " << i << ": " << commands[i]);
      CHECK(same_step(shell_words(commands[i]), ran[i]));
    }
  }
};

}  // namespace

TEST_CASE("a plain build's plan is one line, the command Inductor runs", "[e2e][plan]") {
  PlanCase c;
  RunResult dry = c.kbuild({"--dry-run"});
  REQUIRE(dry.exit_code == 0);
  CHECK(split_lines(dry.out).size() == 1);
  RunResult inductor = c.kbuild({"--dry-run", "--inductor-line"});
  CHECK(inductor.exit_code == 0);
  c.check_plan_runs({}, 1);
}

TEST_CASE("--dry-run --launcher ccache prints the compile through ccache and the local link",
          "[e2e][plan]") {
  PlanCase c;
  recorder(c.dir / "bin/ccache", c.log, true);
  RunResult dry = c.kbuild({"--launcher", c.dir / "bin/ccache", "--dry-run"});
  Strings lines = split_lines(dry.out);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].rfind(c.dir / "bin/ccache " + c.cxx + " ", 0) == 0);
  CHECK(lines[0].find(" -c ") != std::string::npos);
  CHECK(lines[1].rfind(c.cxx + " ", 0) == 0);
  c.check_plan_runs({"--launcher", c.dir / "bin/ccache"}, 2);
  // --inductor-line is for one-step plans.
  RunResult inductor =
      c.kbuild({"--launcher", c.dir / "bin/ccache", "--dry-run", "--inductor-line"});
  CHECK(inductor.exit_code == 2);
  CHECK(inductor.err.find("--inductor-line") != std::string::npos);
}

TEST_CASE("--dry-run --launcher distcc --resolve-native prints the resolved flags that run",
          "[e2e][plan]") {
  PlanCase c;
  recorder(c.dir / "bin/distcc", c.log, true);
  write_file(c.dir / "k.cpp", "extern \"C\" int f() { return 2; }\n");
  c.check_plan_runs({"--launcher", c.dir / "bin/distcc", "--resolve-native", "--no-cache"}, 2);
  RunResult dry =
      c.kbuild({"--launcher", c.dir / "bin/distcc", "--resolve-native", "--no-cache", "--dry-run"});
  Strings lines = split_lines(dry.out);
  REQUIRE(lines.size() == 2);
  // The distributed compile says what native means here; the local link may keep it.
  CHECK(lines[0].find("-march=native") == std::string::npos);
  CHECK(lines[0].find("-march=") != std::string::npos);
}

TEST_CASE("--dry-run --pch prints the header step, which then runs; it writes nothing",
          "[e2e][plan]") {
  PlanCase c;
  write_file(c.dir / "pre.h", "#define P 1\n");
  RunResult dry = c.kbuild({"--pch", c.dir / "pre.h", "--dry-run"});
  INFO(dry.out << dry.err);
  REQUIRE(dry.exit_code == 0);
  Strings lines = split_lines(dry.out);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].rfind("# copy ", 0) == 0);
  CHECK(lines[1].find("c++-header") != std::string::npos);
  CHECK_FALSE(fs::exists(c.home / ".cache/kbuild"));  // nothing written
  c.check_plan_runs({"--pch", c.dir / "pre.h"}, 2);
  // Built once: the next plan reuses it.
  RunResult again = c.kbuild({"--pch", c.dir / "pre.h", "--dry-run"});
  CHECK(split_lines(again.out)[0].rfind("# reuse ", 0) == 0);
}

TEST_CASE("--timeout and --launcher apply to the PCH step", "[e2e][plan]") {
  PlanCase c;
  write_file(c.dir / "pre.h", "#define P 1\n");
  // A compiler that hangs on the header step.
  recorder(c.cxx, c.log, false, "case \"$*\" in *c++-header*) exec sleep 30;; esac\n");
  auto start = std::chrono::steady_clock::now();
  RunResult slow = c.kbuild({"--pch", c.dir / "pre.h", "--timeout", "0.5"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(slow.err);
  CHECK(slow.exit_code == 5);
  CHECK(slow.err.find("--timeout") != std::string::npos);
  CHECK(took < 10);
  // Through a launcher: its record comes first.
  recorder(c.cxx, c.log, false);
  recorder(c.dir / "bin/ccache", c.log, true);
  fs::remove(c.log);
  RunResult launched = c.kbuild({"--pch", c.dir / "pre.h", "--launcher", c.dir / "bin/ccache"});
  INFO(launched.err);
  REQUIRE(launched.exit_code == 0);
  std::vector<Strings> ran = records(c.log);
  REQUIRE_FALSE(ran.empty());
  CHECK(ran[0][0] == c.dir / "bin/ccache");
  bool header = false;
  for (const std::string& w : ran[0]) header = header || w == "c++-header";
  CHECK(header);
}

TEST_CASE("--check-load is a step of the plan, printed as a comment", "[e2e][plan]") {
  PlanCase c;
  RunResult dry = c.kbuild({"--check-load", "--require-symbol", "f", "--dry-run"});
  Strings lines = split_lines(dry.out);
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].rfind("# load check", 0) == 0);
  CHECK(lines[1].find("f") != std::string::npos);
}

// Issue 46 (Low): options that do nothing in a context are refused, never
// silently ignored.
TEST_CASE("--inductor-line without --dry-run, and --version --json, are usage errors",
          "[e2e][plan]") {
  PlanCase c;
  RunResult line = c.kbuild({"--inductor-line"});
  CHECK(line.exit_code == 2);
  CHECK(line.err.find("--inductor-line prints Inductor's command string, which only --dry-run "
                      "prints: add --dry-run") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k.so"));
  RunResult dry = c.kbuild({"--inductor-line", "--dry-run"});
  CHECK(dry.exit_code == 0);
  RunResult version = run_kbuild({"--version", "--json"}, c.home.str());
  CHECK(version.exit_code == 2);
  CHECK(version.err.find("--version has no JSON form; kbuild doctor --json") != std::string::npos);
  CHECK(version.out.empty());
}
