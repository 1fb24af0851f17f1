// The plan cache's key: what a run recorded reading (util/input_record) and
// the environment, argv and stamps it saw; a program run is never remembered.
#include "kbuild/plan_cache.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/file_util.hpp"
#include "util/input_record.hpp"

using namespace kbuild;
using kbuild_test::TempDir;

namespace {

// A run that consulted KBUILD_PLAN_TEST and read `file`, remembered.
void remember(const std::vector<std::string>& argv, const Environment& env, const std::string& file,
              bool run_a_program = false) {
  start_recording_inputs();
  (void)env.get("KBUILD_PLAN_TEST");
  REQUIRE(read_whole_file(file));
  if (run_a_program) record_uncacheable();
  remember_plan(argv, env, PlanOutput{"out\n", "note\n", 0});
  stop_recording_inputs();
}

}  // namespace

TEST_CASE("a remembered plan answers only while its argv, variables and files are as they were",
          "[unit][plan-cache]") {
  TempDir dir;
  Environment env({{"HOME", dir.str()}, {"XDG_CACHE_HOME", dir.str()}});
  REQUIRE(open_cache_root(cache_root(env), true));
  // An input older than two seconds (a younger one is not remembered).
  const std::string file = kbuild_test::source_root() + "/LICENSE";
  const std::vector<std::string> argv{"kbuild", "--dry-run", "k.cpp"};
  remember(argv, env, file);

  std::optional<PlanOutput> hit = cached_plan(argv, env);
  REQUIRE(hit);
  CHECK(hit->out == "out\n");
  CHECK(hit->err == "note\n");
  CHECK(hit->exit_code == 0);

  CHECK_FALSE(cached_plan({"kbuild", "--dry-run", "other.cpp"}, env));
  Environment set = env;
  set.set("KBUILD_PLAN_TEST", "1");
  CHECK_FALSE(cached_plan(argv, set));
  Environment unrelated = env;
  unrelated.set("KBUILD_PLAN_UNRELATED", "1");  // not consulted: no part of the key
  CHECK(cached_plan(argv, unrelated));
}

TEST_CASE("a plan whose run started a program, or read a recent file, is not remembered",
          "[unit][plan-cache]") {
  TempDir dir;
  Environment env({{"HOME", dir.str()}, {"XDG_CACHE_HOME", dir.str()}});
  REQUIRE(open_cache_root(cache_root(env), true));
  const std::vector<std::string> argv{"kbuild", "--dry-run", "k.cpp"};
  SECTION("a program ran") {
    remember(argv, env, kbuild_test::source_root() + "/LICENSE", true);
  }
  SECTION("a file changed just now") {
    kbuild_test::write_file(dir / "new.json", "{}");
    remember(argv, env, dir / "new.json");
  }
  CHECK_FALSE(cached_plan(argv, env));
}

TEST_CASE("only a command line that asks for a dry run looks for a plan", "[unit][plan-cache]") {
  CHECK(may_be_cached_dry_run({"kbuild", "--dry-run", "k.cpp"}));
  CHECK_FALSE(may_be_cached_dry_run({"kbuild", "k.cpp", "-o", "k.so"}));
  CHECK_FALSE(may_be_cached_dry_run({"kbuild", "--dry-run=1", "k.cpp"}));
}
