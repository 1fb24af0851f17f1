// stats.json's counters: one update adds every field, concurrent builders
// (real processes) lose no count, and nothing but a regular file is read or
// followed.
#include "run/output_cache.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "util/process.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

TrustedDir cache_root(const TempDir& tmp) {
  Result<TrustedDir> root = open_cache_root(tmp / "cache", true);
  REQUIRE(root);
  return std::move(*root);
}

nlohmann::json counters(const TempDir& tmp) {
  return nlohmann::json::parse(read_file(tmp / "cache/stats.json"));
}

}  // namespace

TEST_CASE("one update adds every field and keeps the others") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  add_counters(root, {{"hits", 1}, {"remote_misses", 0}});
  add_counters(root, {{"hits", 2}, {"remote_hits", 1}, {"remote_bytes_down", 1000}});
  nlohmann::json j = counters(tmp);
  CHECK(j["hits"] == 3);
  CHECK(j["remote_hits"] == 1);
  CHECK(j["remote_bytes_down"] == 1000);
  CHECK_FALSE(j.contains("remote_misses"));  // a 0 adds no field
  CHECK(fs::directory_iterator(tmp / "cache") != fs::directory_iterator());
  for (const auto& e : fs::directory_iterator(tmp / "cache"))  // no temporary left
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("counts of 0 write nothing") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  add_counters(root, {{"remote_hits", 0}, {"remote_errors", 0}});
  CHECK_FALSE(fs::exists(tmp / "cache/stats.json"));
}

TEST_CASE("a damaged stats.json counts from 0 again") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  write_file(tmp / "cache/stats.json", "{\"hits\": 4");
  add_counters(root, {{"hits", 1}});
  CHECK(counters(tmp)["hits"] == 1);
  write_file(tmp / "cache/stats.json", "{\"hits\": \"many\", \"misses\": 2}");
  add_counters(root, {{"hits", 1}, {"misses", 1}});
  CHECK(counters(tmp)["hits"] == 1);
  CHECK(counters(tmp)["misses"] == 3);
}

TEST_CASE("a link at stats.json is replaced, its target never read or written") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  write_file(tmp / "elsewhere.json", "{\"hits\": 40}");
  fs::create_symlink(tmp / "elsewhere.json", tmp / "cache/stats.json");
  add_counters(root, {{"hits", 1}});
  CHECK(read_file(tmp / "elsewhere.json") == "{\"hits\": 40}");
  CHECK_FALSE(fs::is_symlink(tmp / "cache/stats.json"));
  CHECK(counters(tmp)["hits"] == 1);
}

TEST_CASE("concurrent builders each adding one update lose no count") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  constexpr int kBuilders = 8, kBuilds = 25;
  std::vector<pid_t> children;
  for (int b = 0; b < kBuilders; ++b) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int i = 0; i < kBuilds; ++i)
        add_counters(root, {{"hits", 1}, {"remote_hits", 1}, {"remote_bytes_down", 10}});
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
  }
  nlohmann::json j = counters(tmp);
  CHECK(j["hits"] == kBuilders * kBuilds);
  CHECK(j["remote_hits"] == kBuilders * kBuilds);
  CHECK(j["remote_bytes_down"] == kBuilders * kBuilds * 10);
}

// A kbuild stopped (Ctrl-Z) while it holds stats.lock: the counts are
// optional, so a build waits for them a moment at most, and Ctrl-C ends that.
TEST_CASE("stats.lock held by another: the update is skipped after a short wait") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  add_counters(root, {{"hits", 1}});
  // Another open file description: flock conflicts with it as with another
  // process's.
  UniqueFd holder = lock_file(root.fd(), "stats.lock", true);
  REQUIRE(holder.valid());
  auto seconds_of = [&root] {
    const auto start = std::chrono::steady_clock::now();
    add_counters(root, {{"hits", 1}});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CHECK(seconds_of() < 5);     // about half a second
  CHECK(seconds_of() < 0.25);  // once it stayed held, tried without waiting again
  CHECK(counters(tmp)["hits"] == 1);
  holder.reset();
  add_counters(root, {{"hits", 1}});
  CHECK(counters(tmp)["hits"] == 2);

  // An interrupt held pending (as run_build's guard holds it) ends the wait.
  holder = lock_file(root.fd(), "stats.lock", true);
  REQUIRE(holder.valid());
  {
    InterruptGuard guard;
    ::raise(SIGINT);
    CHECK_THROWS_WITH(add_counters(root, {{"hits", 1}}),
                      Catch::Contains("interrupted by signal 2 while waiting for") &&
                          Catch::Contains("stats.lock"));
  }
  { InterruptWatch fresh; }  // the handlers put back as they were
  CHECK(counters(tmp)["hits"] == 2);
}
