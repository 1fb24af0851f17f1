#include "driver/driver.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "../support/fake_file_clock.hpp"
#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
namespace fs = std::filesystem;

namespace {

// Keeps what the driver says, in order.
struct RecordingListener : BuildListener {
  void warnings(const std::vector<std::string>& lines) override { add("warning", lines); }
  void notes(const std::vector<std::string>& lines) override { add("note", lines); }
  void plan_notes(const std::vector<std::string>& lines) override {
    add("plan note", lines);
    ++plan_notes_calls;
  }
  void info(const std::string& line) override { said.push_back("info: " + line); }
  void add(const std::string& what, const std::vector<std::string>& lines) {
    for (const std::string& line : lines) said.push_back(what + ": " + line);
  }
  std::vector<std::string> said;
  int plan_notes_calls = 0;
};

// An environment with no torch to find and every file under `tmp`.
Environment scratch_env(const TempDir& tmp) {
  Environment env = Environment::from_process();
  env.set("KBUILD_DATA_DIR", std::string(std::getenv("KBUILD_SOURCE_ROOT")) + "/configs");
  env.set("KBUILD_CACHE_DIR", tmp / "cache");
  env.unset("KBUILD_REMOTE_CACHE");
  return env;
}

BuildRequest cpu_job(const TempDir& tmp) {
  BuildRequest job;
  job.query = DeviceQuery{"cpu", false, false, ""};
  job.kind = OutputKind::shared_library;
  job.sources = {tmp / "k.cpp"};
  job.output = tmp / "k.so";
  job.compiler = "g++";
  job.use_torch = false;
  job.dry_run = true;
  return job;
}

SessionRequest no_torch() {
  SessionRequest options;
  options.site.no_torch = true;
  return options;
}

// A no-torch session over the source tree's device files, with a cpu job
// for a kernel in a scratch directory.
struct Scratch {
  TempDir tmp;
  Environment env = scratch_env(tmp);
  Session session{no_torch(), env};
  BuildRequest job = cpu_job(tmp);
  RecordingListener listener;
  Compilation record;
  // The kernel exists: a dry run checks its sources as the build does.
  Scratch() { kbuild_test::write_file(tmp / "k.cpp", "int f() { return 1; }\n"); }
  void drive() {
    record = plan_compilation(session, job, listener);
    run_compilation(record, listener, env);
  }
};

Step command(std::vector<std::string> argv) {
  Step s;
  s.argv = std::move(argv);
  s.output_index = s.argv.size() - 1;
  return s;
}

}  // namespace

TEST_CASE("a dry run with --pch plans the header's steps and writes nothing", "[compilation]") {
  Scratch d;
  const TempDir& tmp = d.tmp;
  kbuild_test::write_file(tmp / "k.cpp", "int f() { return 1; }\n");
  kbuild_test::write_file(tmp / "pre.h", "#include <vector>\n");
  d.job.pch = tmp / "pre.h";
  d.job.compile_commands = tmp / "cc.json";
  d.drive();
  const Compilation& record = d.record;

  REQUIRE(record.plan);
  REQUIRE(record.pch);
  const std::vector<std::string> pch = pch_lines(*record.pch);
  REQUIRE_FALSE(pch.empty());
  CHECK(pch.front().find("pre.h") != std::string::npos);
  // The kernel includes the header the PCH steps build.
  REQUIRE(record.request->include_pch);
  CHECK(record.steps.size() == 1);
  CHECK(d.listener.plan_notes_calls == 1);
  CHECK_FALSE(record.left_alone_database);
  CHECK(fs::exists(tmp / "cc.json"));  // the one file a dry run writes
  CHECK_FALSE(fs::exists(tmp / "k.so"));
  CHECK_FALSE(fs::exists(tmp / "cache"));  // no cache made, no .gch built
  const std::vector<std::string> lines = dry_run_lines(record, false);
  CHECK(lines.size() == pch.size() + 1);
  CHECK(lines.front() == pch.front());
  // Inductor's own line exists only for a one-step plan.
  CHECK_THROWS_AS(dry_run_lines(record, true), Error);
}

TEST_CASE("--pch with --include-pch is refused before anything is planned", "[compilation]") {
  Scratch d;
  d.job.pch = d.tmp / "pre.h";
  d.job.include_pch = d.tmp / "other.h";
  try {
    d.drive();
    FAIL("both were taken");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("--pch and --include-pch exclude each other") !=
          std::string::npos);
  }
  CHECK_FALSE(d.record.plan);
}

TEST_CASE("a dry run refuses what the build refuses, at plan time, before any record",
          "[compilation]") {
  Scratch d;
  fs::remove(d.tmp / "k.cpp");
  d.job.compile_commands = d.tmp / "cc.json";
  try {
    d.drive();
    FAIL("a dry run planned a missing source");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::input);
    CHECK(std::string(e.what()) == "source " + (d.tmp / "k.cpp") + ": No such file or directory");
  }
  CHECK_FALSE(fs::exists(d.tmp / "cc.json"));  // nothing recorded for a build that cannot run
  Scratch same;
  same.job.output = same.tmp / "k.cpp";
  CHECK_THROWS_MATCHES(
      same.drive(), Error,
      Catch::Message("output " + (same.tmp / "k.cpp") + " is also a source; choose another -o"));
  Scratch no_dir;
  no_dir.job.output = no_dir.tmp / "missing/k.so";
  try {
    no_dir.drive();
    FAIL("a dry run planned into a missing directory");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::output);
  }
}

TEST_CASE("a database that is not kbuild's is left for the caller to raise after the plan",
          "[compilation]") {
  Scratch d;
  kbuild_test::write_file(d.tmp / "cc.json", "{not json");
  d.job.compile_commands = d.tmp / "cc.json";
  d.drive();
  const Compilation& record = d.record;
  REQUIRE(record.left_alone_database);
  CHECK(record.left_alone_database->kind() == ErrorKind::output);
  CHECK(kbuild_test::read_file(d.tmp / "cc.json") == "{not json");
  CHECK(dry_run_lines(record, false).size() == 1);
}

TEST_CASE("dry_run_lines: Inductor's line for a one-step plan, every step otherwise",
          "[compilation]") {
  Compilation record;
  record.plan.emplace();
  record.plan->command.inductor_line = "g++ k.cpp -o k.so";
  record.steps = {command({"g++", "k.cpp", "-o", "k.so"})};
  CHECK(dry_run_lines(record, true) == std::vector<std::string>{"g++ k.cpp -o k.so"});
  record.steps.push_back(command({"g++", "k.o", "-o", "k.so"}));
  CHECK(dry_run_lines(record, false) ==
        std::vector<std::string>{"g++ k.cpp -o k.so", "g++ k.o -o k.so"});
  try {
    (void)dry_run_lines(record, true);
    FAIL("a two-step plan printed one line");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("has 2 steps") != std::string::npos);
  }
}

TEST_CASE("unknown_device_warning: a typo of a registered device; an error with --strict",
          "[compilation]") {
  Scratch d;
  const Session& session = d.session;
  CHECK_FALSE(unknown_device_warning(session, "cpu", false));
  CHECK_FALSE(unknown_device_warning(session, "quantum", false));  // near nothing: no warning
  auto typo = unknown_device_warning(session, "cpuu", false);
  REQUIRE(typo);
  CHECK(typo->find("unknown device 'cpuu'; did you mean 'cpu'?") == 0);
  CHECK_THROWS_AS(unknown_device_warning(session, "cpuu", true), Error);
}

TEST_CASE("a dry run refuses a remote cache address the build refuses", "[compilation]") {
  Scratch d;
  d.job.remote_cache = "bogus://x";
  try {
    d.drive();
    FAIL("a dry run planned with a remote cache the build refuses");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("--remote-cache: 'bogus://x'") != std::string::npos);
  }
}

TEST_CASE("Driver::dry_run plans the device file's launcher, as the command line's dry run does",
          "[compilation]") {
  TempDir tmp;
  kbuild_test::write_file(tmp / "acc.json", R"({"device": "acc", "launcher": "ccache"})");
  kbuild_test::write_file(tmp / "k.cpp", "int f() { return 1; }\n");
  const Environment env = scratch_env(tmp);
  SessionRequest options = no_torch();
  options.device_files = {tmp / "acc.json"};
  BuildRequest job = cpu_job(tmp);
  job.query.device_type = "acc";
  RecordingListener listener;
  Driver driver(options, env);
  const std::vector<std::string> lines = driver.dry_run(job, listener);
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.front().rfind("ccache g++ ", 0) == 0);
  // The command line's way, plan then run printing only: the same lines.
  Compilation compilation = driver.plan(job, listener);
  driver.run(compilation, listener);
  CHECK(dry_run_lines(compilation, false) == lines);
}

TEST_CASE("build-many runs the kbuild the Driver's options name, not the host program",
          "[compilation]") {
  TempDir tmp;
  // A stand-in kbuild that says what it was asked.
  kbuild_test::write_file(tmp / "kbuild", "#!/bin/sh\necho \"$@\" >> \"" + tmp / "asked" + "\"\n",
                          true);
  kbuild_test::write_file(tmp / "many.json", R"({"builds": [["k.cpp", "-o", "k.so"]]})");
  SessionRequest options = no_torch();
  options.kbuild_program = tmp / "kbuild";
  Driver driver(options, scratch_env(tmp));
  BatchRequest request;
  request.build_list = tmp / "many.json";
  request.jobs = 1;
  const BatchRun run = driver.build_many(request);
  REQUIRE(run.results.size() == 1);
  CHECK(run.results.front().exit_code == 0);
  CHECK(kbuild_test::read_file(tmp / "asked") == "k.cpp -o k.so\n");
}

// Issue 44: the file system is passed in, never a global. A Session given
// one hands it to what its builds state and read: the run settings (the key,
// the manifest, a hit's check) and the caches it opens.
TEST_CASE("a session's file system reaches its compilation's settings and caches",
          "[compilation]") {
  TempDir tmp;
  kbuild_test::write_file(tmp / "k.cpp", "int f() { return 1; }\n");
  Environment env = scratch_env(tmp);
  env.set("KBUILD_REMOTE_CACHE", "redis://127.0.0.1:1");  // opened, never asked (a dry run)
  kbuild_test::FakeFileClock files;
  Session session{no_torch(), env, files};
  RecordingListener listener;
  Compilation c = plan_compilation(session, cpu_job(tmp), listener);
  REQUIRE(c.settings.files == &files);
  REQUIRE(c.cache);
  CHECK(&c.cache->files() == &files);
  REQUIRE(c.settings.output_cache == c.cache.get());
  // The system's own is a different object: nothing fell back to it.
  CHECK(c.settings.files != &system_file_system());
}
