// Precompiled headers: planned before anything runs (a reusable .gch is
// reused, else the header build's steps), built through the runner (here a
// fake compiler behind a fake process runner: no g++ runs), and reused only
// while every file it read is unchanged.
#include "run/pch.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "../support/fake_observation.hpp"
#include "../support/fake_redis.hpp"
#include "../support/mock_storage.hpp"
#include "../support/test_support.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "run/build_runner.hpp"
#include "run/input_manifest.hpp"
#include "run/remote_cache.hpp"
#include "run/storage.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using kbuild_test::has;
using kbuild_test::MockStorage;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

// Plays g++ precompiling: writes what -o names and, observed, the records
// of reading the header it was given and `included`. A question (`-E`)
// answers nothing and is not counted.
class FakeCompiler : public ProcessRunner {
 public:
  std::vector<Strings> ran;
  std::string included;
  bool list_inputs = true;
  ProcessResult run(const Strings& argv, const ProcessRequest& options) override {
    ProcessResult r;
    r.exited = true;
    r.exit_code = 0;
    if (std::find(argv.begin(), argv.end(), "-E") != argv.end()) return r;
    ran.push_back(argv);
    std::string source;
    for (std::size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i] == "-o") write_file(argv[i + 1], "gpch bytes " + std::to_string(ran.size()));
      if (argv[i] == "c++-header") source = argv[i + 1];
    }
    if (list_inputs)
      kbuild_test::write_fake_records(options, argv[0], {{source, included}, {}, {}, {}, {}});
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
  PchJob plan(const std::string& cache_dir = "") {
    return plan_pch(kernel, tmp / "pre.h", registry, ctx(),
                    cache_dir.empty() ? tmp / "cache" : cache_dir, &*cache, Launcher{}, env);
  }
  PchJob run(const PchJob& p, const TrustedDir* in = nullptr, Storage* storage = nullptr,
             RemoteCache* remote = nullptr) {
    RunSettings settings;
    settings.processes = &fake;
    settings.observer = tmp / "observer.so";  // the fake writes the records itself
    settings.storage = storage;
    settings.remote_cache = remote;
    return run_pch(p, in ? in : &*cache, settings, registry, ctx(), kernel, env);
  }
  // The .gch and its record gone from pch/ (as on a machine that never
  // built it), the header's copy left: planning builds it again.
  void forget_pch(const PchJob& p) {
    fs::remove(p.include + ".gch");
    fs::remove(p.dir + "/" + p.key + ".deps");
  }
};

}  // namespace

TEST_CASE("the plan: copy the header into the cache's pch/, precompile it where it lies into there",
          "[unit][pch]") {
  PchCase c;
  PchJob p = c.plan();
  CHECK_FALSE(p.reuse);
  CHECK(p.key.size() == 40);
  CHECK(p.dir == c.tmp / "cache/pch");
  CHECK(p.include == c.tmp / "cache/pch/" + p.key + ".h");
  REQUIRE(p.steps.size() == 1);
  CHECK(has(p.steps[0].argv, "c++-header"));
  // The header itself, so its quoted includes resolve beside it; the .gch
  // goes where the kernel's -include of the copy finds it.
  CHECK(has(p.steps[0].argv, c.tmp / "pre.h"));
  CHECK_FALSE(has(p.steps[0].argv, p.include));
  CHECK(p.steps[0].argv[p.steps[0].output_index] == p.include + ".gch");
  CHECK(p.steps[0].observed);
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
  PchJob built = c.run(c.plan());
  CHECK(built.built);
  CHECK(c.fake.ran.size() == 1);
  const std::string include = c.plan().include;
  CHECK(built.include == include);
  CHECK(read_file(include) == read_file(c.tmp / "pre.h"));
  CHECK(fs::exists(include + ".gch"));

  PchJob again = c.plan();
  CHECK(again.reuse);
  CHECK(again.identity == built.identity);
  CHECK(again.steps.empty());
  CHECK(pch_lines(again) ==
        Strings{"# reuse " + include + ".gch (what it was built from is unchanged)"});
  PchJob reused = c.run(again);
  CHECK_FALSE(reused.built);
  CHECK(reused.identity == built.identity);
  CHECK(c.fake.ran.size() == 1);

  // A header it includes changes: built again, under a new identity.
  write_file(c.tmp / "inc.h", "#define X 2\n");
  PchJob stale = c.plan();
  CHECK_FALSE(stale.reuse);
  PchJob rebuilt = c.run(stale);
  CHECK(rebuilt.built);
  CHECK(rebuilt.identity != built.identity);
}

TEST_CASE("a .gch replaced behind kbuild's back is not reused", "[unit][pch]") {
  PchCase c;
  PchJob built = c.run(c.plan());
  const std::string gch = built.include + ".gch";
  fs::remove(gch);
  write_file(gch, "someone else's bytes");
  CHECK_FALSE(c.plan().reuse);
  fs::remove(gch);
  CHECK_FALSE(c.plan().reuse);
}

TEST_CASE("a compiler that reports nothing leaves no .gch that could go stale", "[unit][pch]") {
  PchCase c;
  c.fake.list_inputs = false;
  PchJob p = c.plan();
  try {
    (void)c.run(p);
    FAIL("built without a record of its inputs");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compile_failed);
    CHECK_THAT(std::string(e.what()), Catch::Contains("read is not known"));
  }
  CHECK_FALSE(fs::exists(p.include + ".gch"));
  CHECK_FALSE(c.plan().reuse);
}

TEST_CASE("without a cache the .gch lives in a private directory, gone with the result",
          "[unit][pch]") {
  PchCase c;
  PchJob p =
      plan_pch(c.kernel, c.tmp / "pre.h", c.registry, c.ctx(), "", nullptr, Launcher{}, c.env);
  CHECK(p.dir.empty());
  CHECK_FALSE(p.reuse);
  std::string private_dir;
  {
    RunSettings settings;
    settings.processes = &c.fake;
    settings.observer = c.tmp / "observer.so";
    PchJob r = run_pch(p, nullptr, settings, c.registry, c.ctx(), c.kernel, c.env);
    CHECK(r.built);
    REQUIRE(r.scratch);
    private_dir = fs::path(r.include).parent_path().string();
    CHECK(fs::exists(r.include + ".gch"));
    CHECK((fs::status(private_dir).permissions() & fs::perms::all) == fs::perms::owner_all);
    CHECK(has(c.fake.ran.back(), c.tmp / "pre.h"));  // the header where it lies
  }
  CHECK_FALSE(fs::exists(private_dir));
}

TEST_CASE("a --pch header that is a FIFO is refused up front, never waited on", "[unit][pch]") {
  PchCase c;
  const std::string fifo = c.tmp / "fifo.h";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a read would block for ever
  try {
    (void)plan_pch(c.kernel, fifo, c.registry, c.ctx(), "", nullptr, Launcher{}, c.env);
    FAIL("planned a FIFO as the header");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::input);
    CHECK(std::string(e.what()) == "cannot read the --pch header " + fifo + ": not a regular file");
  }
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
    // Why, as the system said it.
    CHECK(std::string(e.what()) ==
          "cannot read the --pch header " + c.tmp / "missing.h" + ": No such file or directory");
  }
  fs::create_directory(c.tmp / "dir.h");
  try {
    (void)plan_pch(c.kernel, c.tmp / "dir.h", c.registry, c.ctx(), "", nullptr, Launcher{}, c.env);
    FAIL("planned a directory as the header");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::input);
    CHECK(std::string(e.what()) ==
          "cannot read the --pch header " + c.tmp / "dir.h" + ": Is a directory");
  }
  c.kernel.compiler = c.tmp / "no-g++";
  try {
    (void)c.plan();
    FAIL("planned with a missing compiler");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compiler_missing);
  }
}

TEST_CASE("the header build goes through the storage: a hit runs no compiler", "[unit][pch]") {
  PchCase c;
  MockStorage storage;
  PchJob first = c.plan();
  PchJob built = c.run(first, nullptr, &storage);
  CHECK(built.built);
  CHECK_FALSE(built.hit);
  CHECK(c.fake.ran.size() == 1);
  CHECK(storage.calls == Strings{"get", "lease", "put", "release"});
  REQUIRE(storage.entries.size() == 1);
  const std::string gch = read_file(first.include + ".gch");
  CHECK(storage.entries.begin()->second == gch);

  c.forget_pch(first);
  PchJob again = c.plan();
  REQUIRE_FALSE(again.reuse);
  storage.calls.clear();
  PchJob fetched = c.run(again, nullptr, &storage);
  CHECK(fetched.hit);
  CHECK_FALSE(fetched.built);
  CHECK(c.fake.ran.size() == 1);  // no compiler ran
  CHECK(storage.calls == Strings{"get"});
  CHECK(read_file(again.include + ".gch") == gch);
  CHECK(fetched.identity != "");
  // The entry's record of what it read is kept: the next plan reuses it,
  // and a header it read changing still makes it stale.
  CHECK(c.plan().reuse);
  write_file(c.tmp / "inc.h", "#define X 3\n");
  CHECK_FALSE(c.plan().reuse);
}

TEST_CASE("another builder's .gch arrives while it holds the lease: none compiled here",
          "[unit][pch]") {
  PchCase c;
  MockStorage storage;
  storage.other_holds_lease = true;
  storage.arrives = "gpch from another builder";
  struct timespec later {};
  later.tv_sec = 4000000000;
  Observation observed;
  observed.reported = true;
  observed.read = {c.tmp / "inc.h"};
  ObservedBuild build;
  build.started = later;
  Result<std::string> record = observed_manifest(observed, build);
  REQUIRE(record);
  storage.arrives_manifest = *with_replay(*record, CompilerOutput{}, std::nullopt);
  PchJob p = c.plan();
  PchJob r = c.run(p, nullptr, &storage);
  CHECK(r.hit);
  CHECK(r.remote);
  CHECK(c.fake.ran.empty());
  CHECK(storage.calls == Strings{"get", "lease"});
  CHECK(read_file(p.include + ".gch") == "gpch from another builder");
  CHECK(c.plan().reuse);
}

TEST_CASE("a read-only remote cache: the .gch is compiled, never uploaded and no lease taken",
          "[unit][pch]") {
  PchCase c;
  kbuild_test::FakeRedis server;
  RemoteCacheSettings rs;
  rs.url = "redis://fake:6379";
  rs.readonly = true;
  RemoteCache remote(rs, server.connector());
  CacheSettings cs;
  cs.enabled = true;
  cs.root = c.tmp / "local";
  OutputCache local = OutputCache::open(cs).cache;
  StorageStack stack(&local, &remote);
  REQUIRE_FALSE(stack.empty());
  PchJob r = c.run(c.plan(), nullptr, &stack.top(), &remote);
  CHECK(r.built);
  CHECK(c.fake.ran.size() == 1);
  CHECK_FALSE(server.command_names().empty());  // it was asked
  CHECK(server.write_commands().empty());
  CHECK(server.values().empty());
}

TEST_CASE("a hit without a record of what the .gch read is not used as one", "[unit][pch]") {
  PchCase c;
  MockStorage storage;
  PchJob p = c.plan();
  (void)c.run(p, nullptr, &storage);
  c.forget_pch(p);
  REQUIRE(storage.manifests.size() == 1);
  storage.manifests.begin()->second.clear();
  // Not a whole entry (no manifest, nothing of what the compiler printed):
  // a miss, and the header is precompiled again.
  const std::size_t ran = c.fake.ran.size();
  PchJob again = c.run(c.plan(), nullptr, &storage);
  CHECK_FALSE(again.hit);
  CHECK(again.built);
  CHECK(c.fake.ran.size() == ran + 1);
}

TEST_CASE("with a remote cache the header build's shared key is recorded, the same for two caches",
          "[unit][pch]") {
  RemoteCacheSettings remote_settings;
  remote_settings.url = "redis://127.0.0.1:1";  // never asked: the storage is a mock
  RemoteCache remote(remote_settings);
  PchCase a, b;
  MockStorage storage_a, storage_b;
  PchJob plan_a = a.plan(), plan_b = b.plan();
  PchJob built_a = a.run(plan_a, nullptr, &storage_a, &remote);
  PchJob built_b = b.run(plan_b, nullptr, &storage_b, &remote);
  REQUIRE(built_a.kernel_parts);
  REQUIRE(built_b.kernel_parts);
  REQUIRE(built_a.kernel_parts->extra.size() == 1);
  CHECK(built_a.kernel_parts->extra[0].rfind("pch ", 0) == 0);
  CHECK(built_a.kernel_parts->rewrites ==
        std::vector<std::pair<std::string, std::string>>{{plan_a.include, "<pch>"}});
  // Another place, another local key, and another shared key: the header
  // is precompiled where it lies, and its place decides what its quoted
  // includes are (trees at other paths share through the base-dir opt-in).
  CHECK(plan_a.key != plan_b.key);
  const std::string shared_a = built_a.kernel_parts->extra[0].substr(0, 4 + 64);
  CHECK(shared_a != built_b.kernel_parts->extra[0].substr(0, 4 + 64));
  // Reused later: the same parts from the record.
  PchJob again = a.plan();
  REQUIRE(again.reuse);
  REQUIRE(again.kernel_parts);
  CHECK(again.kernel_parts->extra == built_a.kernel_parts->extra);
  // Without a remote cache nothing is recorded.
  PchCase alone;
  CHECK_FALSE(alone.run(alone.plan(), nullptr, &storage_a).kernel_parts);
}

TEST_CASE("with a remote cache a .gch recorded without a shared key is built again, a hit",
          "[unit][pch]") {
  RemoteCacheSettings remote_settings;
  remote_settings.url = "redis://127.0.0.1:1";  // never asked: the storage is a mock
  RemoteCache remote(remote_settings);
  PchCase c;
  MockStorage storage;
  PchJob alone = c.run(c.plan(), nullptr, &storage);  // no remote: no shared key recorded
  CHECK_FALSE(alone.kernel_parts);
  CHECK(c.plan().reuse);
  auto shared_plan = [&c] {
    return plan_pch(c.kernel, c.tmp / "pre.h", c.registry, c.ctx(), c.tmp / "cache", &*c.cache,
                    Launcher{}, c.env, true);
  };
  PchJob again = shared_plan();
  REQUIRE_FALSE(again.reuse);
  PchJob fetched = c.run(again, nullptr, &storage, &remote);
  CHECK(fetched.hit);  // the storage's entry: nothing compiled
  CHECK(c.fake.ran.size() == 1);
  REQUIRE(fetched.kernel_parts);
  PchJob now = shared_plan();
  CHECK(now.reuse);
  REQUIRE(now.kernel_parts);
  CHECK(now.kernel_parts->extra == fetched.kernel_parts->extra);
}
