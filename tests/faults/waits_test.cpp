// No wait without end: what another program holds (a FIFO at KBUILD_LOG,
// stats.lock held by a stopped kbuild) never keeps a build waiting for ever.
// kbuild runs under timeout(1) here, so a hang fails the test instead of
// hanging the suite.
#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace waits_test {

// kbuild with `args` in a hermetic environment (home `home`), ended with
// SIGKILL after `limit_s` seconds; how long it took is `seconds`.
RunResult kbuild_bounded(const std::vector<std::string>& args, const std::string& home,
                         std::map<std::string, std::string> set, double& seconds,
                         int limit_s = 60) {
  std::vector<std::string> argv{"/usr/bin/timeout", "-s", "KILL", std::to_string(limit_s),
                                kbuild_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> unset;
  make_hermetic(home, set, unset);
  const auto start = std::chrono::steady_clock::now();
  RunResult r = run(argv, set, unset);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::uint64_t hits_counted(const std::string& cache) {
  const auto j = nlohmann::json::parse(read_file(cache + "/stats.json"));
  return j.value("hits", std::uint64_t{0});
}

}  // namespace waits_test

TEST_CASE("a FIFO at KBUILD_LOG is not opened: the compile ends, with a warning", "[faults]") {
  TempDir home, dir;
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  // Nothing ever reads it: opening it for writing would block for ever.
  const std::string log = never_fifo(dir / "kbuild.log");
  double seconds = 0;
  RunResult r = waits_test::kbuild_bounded(
      {"cc", "--", "g++", dir / "k.cpp", "-shared", "-fPIC", "-o", dir / "k.so"}, home.str(),
      {{"KBUILD_LOG", log}}, seconds);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(seconds < 30);
  CHECK(r.err.find("KBUILD_LOG=" + log + " cannot be appended to") != std::string::npos);
  CHECK(call_f(dir / "k.so") == 1);
}

TEST_CASE("stats.lock held by a stopped kbuild: a hit ends at once, its count skipped",
          "[faults]") {
  TempDir home, dir;
  const std::string cache = home / ".cache/kbuild";
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 2; }\n");
  const std::vector<std::string> build{"--no-torch", dir / "k.cpp", "-o", dir / "k.so", "-v"};
  double seconds = 0;
  REQUIRE(waits_test::kbuild_bounded(build, home.str(), {}, seconds).exit_code == 0);
  RunResult warm = waits_test::kbuild_bounded(build, home.str(), {}, seconds);
  REQUIRE(warm.err.find("cache: hit") != std::string::npos);
  const std::uint64_t hits = waits_test::hits_counted(cache);
  REQUIRE(hits == 1);
  {
    // The holder: the lock taken on a descriptor that its last program
    // keeps, blocked on a FIFO nothing writes (as a kbuild stopped by
    // Ctrl-Z would hold it); SIGTERM from the fixture ends it.
    const std::string fifo = never_fifo(dir / "never");
    BackgroundProcess holder(
        {"/bin/sh", "-c", "exec 9>>\"$0\"; flock 9; echo locked; exec cat \"$1\"",
         cache + "/stats.lock", fifo},
        "locked");
    RunResult r = waits_test::kbuild_bounded(build, home.str(), {}, seconds);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("cache: hit") != std::string::npos);
    CHECK(seconds < 20);                             // was: until the holder ends
    CHECK(waits_test::hits_counted(cache) == hits);  // the count was skipped
    CHECK(call_f(dir / "k.so") == 2);
  }
  // Once it is free, builds count again.
  REQUIRE(waits_test::kbuild_bounded(build, home.str(), {}, seconds).exit_code == 0);
  CHECK(waits_test::hits_counted(cache) == hits + 1);
}
