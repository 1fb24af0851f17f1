// Precompiled headers: planned before anything runs (a reusable .gch is
// reused, else the header build's steps), built through the runner (here a
// fake compiler behind a fake process runner: no g++ runs), and reused only
// while every file it read is unchanged.
#include "kbuild/pch.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/error.hpp"
#include "kbuild/registry.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

// Plays g++ precompiling: writes what -o names and lists, through
// SUNPRO_DEPENDENCIES, the header it was given and `included`.
class FakeCompiler : public ProcessRunner {
 public:
  std::vector<Strings> ran;
  std::string included;
  bool list_inputs = true;
  ProcessResult run(const Strings& argv, const ProcessOptions& options) override {
    ran.push_back(argv);
    ProcessResult r;
    r.exited = true;
    r.exit_code = 0;
    std::string source;
    for (std::size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i] == "-o") write_file(argv[i + 1], "gpch bytes " + std::to_string(ran.size()));
      if (argv[i] == "c++-header") source = argv[i + 1];
    }
    if (list_inputs && options.environment)
      if (auto deps = options.environment->get("SUNPRO_DEPENDENCIES"))
        write_file(deps->substr(0, deps->find(' ')), "x.gch: " + source + " " + included + "\n");
    return r;
  }
};

struct PchCase {
  TempDir tmp;
  Registry registry;
  Paths paths;
  Environment env;
  FakeCompiler fake;
  BuildRequest kernel;
  std::optional<TrustedDir> cache;
  PchCase() {
    write_file(tmp / "g++", "#!/bin/sh\nexit 1\n", true);  // found, never run
    write_file(tmp / "pre.h", "#include \"inc.h\"\n");
    write_file(tmp / "inc.h", "#define X 1\n");
    fake.included = tmp / "inc.h";
    kernel.query.device_type = "cpu";
    kernel.sources = {tmp / "k.cpp"};
    kernel.output = tmp / "k.so";
    kernel.compiler = tmp / "g++";
    kernel.use_torch = false;
    Result<TrustedDir> root = open_cache_root(tmp / "cache", true);
    REQUIRE(root);
    cache.emplace(std::move(*root));
  }
  ResolveContext ctx() { return ResolveContext{paths, env}; }
  PchPlan plan(const std::string& cache_dir = "") {
    return plan_pch(kernel, tmp / "pre.h", registry, ctx(),
                    cache_dir.empty() ? tmp / "cache" : cache_dir, &*cache, Launcher{}, env);
  }
  PchResult run(const PchPlan& p, const TrustedDir* in = nullptr) {
    BuildSettings settings;
    settings.processes = &fake;
    return run_pch(p, in ? in : &*cache, settings, registry, ctx(), kernel, env);
  }
};

bool has(const Strings& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("the plan: copy the header into the cache's pch/ and precompile it there",
          "[unit][pch]") {
  PchCase c;
  PchPlan p = c.plan();
  CHECK_FALSE(p.reuse);
  CHECK(p.key.size() == 40);
  CHECK(p.dir == c.tmp / "cache/pch");
  CHECK(p.include == c.tmp / "cache/pch/" + p.key + ".h");
  REQUIRE(p.steps.size() == 1);
  CHECK(has(p.steps[0].argv, "c++-header"));
  CHECK(has(p.steps[0].argv, p.include));
  CHECK(p.steps[0].argv[p.steps[0].output_index] == p.include + ".gch");
  CHECK(p.steps[0].input_list == InputList::environment);
  Strings lines = pch_lines(p);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "# copy " + c.tmp / "pre.h" + " to " + p.include);
  CHECK_FALSE(fs::exists(c.tmp / "cache/pch"));  // planning writes nothing
  CHECK(c.fake.ran.empty());
}

TEST_CASE("the key follows the header's bytes and the flags", "[unit][pch]") {
  PchCase c;
  const std::string key = c.plan().key;
  CHECK(c.plan().key == key);
  c.kernel.extra_flags = {"-O1"};
  CHECK(c.plan().key != key);
  c.kernel.extra_flags.clear();
  write_file(c.tmp / "pre.h", "#include \"inc.h\"\n#define Y 2\n");
  CHECK(c.plan().key != key);
}

TEST_CASE("built once, then reused while what it read is unchanged", "[unit][pch]") {
  PchCase c;
  PchResult built = c.run(c.plan());
  CHECK(built.built);
  CHECK(c.fake.ran.size() == 1);
  const std::string include = c.plan().include;
  CHECK(built.include == include);
  CHECK(read_file(include) == read_file(c.tmp / "pre.h"));
  CHECK(fs::exists(include + ".gch"));

  PchPlan again = c.plan();
  CHECK(again.reuse);
  CHECK(again.identity == built.identity);
  CHECK(again.steps.empty());
  CHECK(pch_lines(again) ==
        Strings{"# reuse " + include + ".gch (what it was built from is unchanged)"});
  PchResult reused = c.run(again);
  CHECK_FALSE(reused.built);
  CHECK(reused.identity == built.identity);
  CHECK(c.fake.ran.size() == 1);

  // A header it includes changes: built again, under a new identity.
  write_file(c.tmp / "inc.h", "#define X 2\n");
  PchPlan stale = c.plan();
  CHECK_FALSE(stale.reuse);
  PchResult rebuilt = c.run(stale);
  CHECK(rebuilt.built);
  CHECK(rebuilt.identity != built.identity);
}

TEST_CASE("a .gch replaced behind kbuild's back is not reused", "[unit][pch]") {
  PchCase c;
  PchResult built = c.run(c.plan());
  const std::string gch = built.include + ".gch";
  fs::remove(gch);
  write_file(gch, "someone else's bytes");
  CHECK_FALSE(c.plan().reuse);
  fs::remove(gch);
  CHECK_FALSE(c.plan().reuse);
}

TEST_CASE("a compiler that lists nothing leaves no .gch that could go stale", "[unit][pch]") {
  PchCase c;
  c.fake.list_inputs = false;
  PchPlan p = c.plan();
  try {
    (void)c.run(p);
    FAIL("built without a list of inputs");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compile_failed);
    CHECK_THAT(std::string(e.what()), Catch::Contains("did not list the files"));
  }
  CHECK_FALSE(fs::exists(p.include + ".gch"));
  CHECK_FALSE(c.plan().reuse);
}

TEST_CASE("without a cache the .gch lives in a private directory, gone with the result",
          "[unit][pch]") {
  PchCase c;
  PchPlan p =
      plan_pch(c.kernel, c.tmp / "pre.h", c.registry, c.ctx(), "", nullptr, Launcher{}, c.env);
  CHECK(p.dir.empty());
  CHECK_FALSE(p.reuse);
  std::string private_dir;
  {
    BuildSettings settings;
    settings.processes = &c.fake;
    PchResult r = run_pch(p, nullptr, settings, c.registry, c.ctx(), c.kernel, c.env);
    CHECK(r.built);
    REQUIRE(r.scratch);
    private_dir = fs::path(r.include).parent_path().string();
    CHECK(fs::exists(r.include + ".gch"));
    CHECK((fs::status(private_dir).permissions() & fs::perms::all) == fs::perms::owner_all);
    CHECK(has(c.fake.ran.back(), r.include));  // the step names the private copy
  }
  CHECK_FALSE(fs::exists(private_dir));
}

TEST_CASE("a header that cannot be read, or a compiler not found, is an error up front",
          "[unit][pch]") {
  PchCase c;
  try {
    (void)plan_pch(c.kernel, c.tmp / "missing.h", c.registry, c.ctx(), "", nullptr, Launcher{},
                   c.env);
    FAIL("planned a missing header");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::input);
    CHECK(std::string(e.what()) == "--pch header " + c.tmp / "missing.h" + " cannot be read");
  }
  c.kernel.compiler = c.tmp / "no-g++";
  try {
    (void)c.plan();
    FAIL("planned with a missing compiler");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compiler_missing);
  }
}
