// run_build through a fake process runner: the runner's own logic (cache
// hit and miss, split steps, what a failed step or load check leaves) with
// no compiler at all.
#include <fcntl.h>
#include <fstream>

#include <catch2/catch.hpp>

#include "../support/fake_observation.hpp"
#include "../support/fake_process_runner.hpp"
#include "../support/mock_storage.hpp"
#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "run/build_runner.hpp"
#include "run/storage.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using kbuild_test::MockStorage;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace {

// The smallest file check_output_format() accepts as an ELF object.
std::string tiny_elf(char tag) {
  std::string elf(64, '\0');
  elf.replace(0, 4,
              "\x7f"
              "ELF");
  elf[4] = 2;  // 64-bit
  elf[5] = 1;  // little-endian
  elf[63] = tag;
  return elf;
}

// Plays the compiler: writes what `-o` names (and, observed, the records of
// reading the header), answers kbuild's questions, fails when told to.
class FakeProcesses : public ProcessRunner {
 public:
  std::vector<std::vector<std::string>> ran;
  char tag = 'a';
  bool write_output = true;
  int exit_code = 0;
  std::string load_answer;  // what the load check prints; "" loads fine
  ProcessResult run(const std::vector<std::string>& argv, const ProcessRequest& options) override {
    ProcessResult r;
    r.exited = true;
    r.exit_code = 0;
    for (const std::string& w : argv)
      if (w == "-print-search-dirs" || w == "/dev/null") return r;  // a question, not a step
    ran.push_back(argv);
    if (argv[0] == "/bin/true") {  // the load checker
      r.exit_code = load_answer.empty() ? 0 : 1;
      r.out = load_answer;
      return r;
    }
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "-o" && write_output) write_file(argv[i + 1], tiny_elf(tag));
    kbuild_test::write_fake_records(options, argv[0], {{header}, {}, {}, {}, {}});
    r.exit_code = exit_code;
    if (exit_code != 0) r.err = "k.cpp:1:1: error: expected something\n";
    return r;
  }
  std::string header;
};

struct RunnerCase {
  TempDir dir;
  FakeProcesses fake;
  BuildPlan plan;
  std::vector<std::string> sources;
  RunSettings settings;
  std::optional<OutputCache> cache;
  RunnerCase() {
    fake.header = dir / "h.h";
    write_file(dir / "h.h", "#define H 1\n");
    write_file(dir / "k.cpp", "int f() { return H; }\n");
    sources = {dir / "k.cpp"};
    plan.kind = OutputKind::object;
    plan.output = dir / "k.o";
    plan.command.argv = {"/usr/bin/g++", sources[0], "-c", "-o", plan.output};
    plan.command.output_index = 4;
    settings.processes = &fake;
    settings.observer = dir / "observer.so";  // the fake writes the records itself
  }
  void with_cache() {
    CacheSettings cs;
    cs.enabled = true;
    cs.root = dir / "cache";
    cache.emplace(OutputCache::open(cs).cache);
    REQUIRE(cache->enabled());
    settings.output_cache = &*cache;
  }
  BuildOutcome build(const StepInput& extra = {}) {
    StepInput in = extra;
    in.sources = sources;
    in.observe = settings.output_cache != nullptr || settings.storage != nullptr;
    BuildOutcome outcome;
    run_build(plan, plan_steps(plan, in), sources, settings, Environment{}, outcome);
    return outcome;
  }
};

}  // namespace

TEST_CASE("a miss runs the one step and stores it; the next build is a hit that runs nothing",
          "[unit][runner]") {
  RunnerCase c;
  c.with_cache();
  BuildOutcome first = c.build();
  CHECK(first.cache == CacheStatus::miss);
  REQUIRE(c.fake.ran.size() == 1);
  CHECK(read_file(c.plan.output) == tiny_elf('a'));
  c.fake.tag = 'b';  // were the compiler to run again, it would write other bytes
  BuildOutcome second = c.build();
  CHECK(second.cache == CacheStatus::hit);
  CHECK(c.fake.ran.size() == 1);
  CHECK(read_file(c.plan.output) == tiny_elf('a'));
  // A header it read changes: a miss again.
  write_file(c.dir / "h.h", "#define H 2\n");
  CHECK(c.build().cache == CacheStatus::miss);
  CHECK(read_file(c.plan.output) == tiny_elf('b'));
}

TEST_CASE("a split build runs the compile through the launcher, then links the objects locally",
          "[unit][runner]") {
  RunnerCase c;
  c.with_cache();
  c.plan.kind = OutputKind::shared_library;
  c.plan.output = c.dir / "k.so";
  c.plan.command.argv = {"/usr/bin/g++", c.sources[0], "-shared", "-o", c.plan.output};
  c.plan.command.output_index = 4;
  StepInput in;
  in.launcher.argv = {"/usr/bin/env"};
  in.launcher.split = true;
  BuildOutcome outcome = c.build(in);
  REQUIRE(c.fake.ran.size() == 2);
  const auto& compile = c.fake.ran[0];
  const auto& link = c.fake.ran[1];
  CHECK(compile[0] == "/usr/bin/env");
  // No dependency list on the command line: the observer records what it read.
  CHECK(std::find(compile.begin(), compile.end(), "-MF") == compile.end());
  CHECK(link[0] == "/usr/bin/g++");
  // The link reads the object the compile wrote, in the private work directory.
  auto object = std::find(compile.begin(), compile.end(), "-o");
  REQUIRE(object != compile.end());
  CHECK(std::find(link.begin(), link.end(), *(object + 1)) != link.end());
  CHECK((object + 1)->find(".k.so.kbuild-tmp.") != std::string::npos);
  CHECK(outcome.cache == CacheStatus::miss);
  CHECK(read_file(c.plan.output) == tiny_elf('a'));
}

TEST_CASE("a failed load check leaves the earlier output and stores nothing", "[unit][runner]") {
  RunnerCase c;
  c.plan.kind = OutputKind::shared_library;
  c.plan.output = c.dir / "k.so";
  c.plan.command.argv = {"/usr/bin/g++", c.sources[0], "-shared", "-o", c.plan.output};
  write_file(c.plan.output, "earlier\n");
  c.settings.load_check.loader = {"/bin/true"};
  c.fake.load_answer = "undefined symbol: g\n";
  StepInput in;
  in.load_check = true;
  try {
    c.build(in);
    FAIL("the load check passed");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::load_failed);
    CHECK(std::string(e.what()).find("undefined symbol: g") != std::string::npos);
  }
  CHECK(read_file(c.plan.output) == "earlier\n");
}

TEST_CASE("a compiler that fails, or exits 0 without writing, leaves the output alone",
          "[unit][runner]") {
  RunnerCase c;
  c.with_cache();
  write_file(c.plan.output, "earlier\n");
  c.fake.exit_code = 1;
  try {
    c.build();
    FAIL("the build passed");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compile_failed);
    CHECK(std::string(e.what()).find("expected something") != std::string::npos);
  }
  c.fake.exit_code = 0;
  c.fake.write_output = false;
  try {
    c.build();
    FAIL("the build passed");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compile_failed);
    CHECK(std::string(e.what()).find("not usable") != std::string::npos);
  }
  CHECK(read_file(c.plan.output) == "earlier\n");
  CHECK(c.cache->stats().entries == 0);
}

TEST_CASE("check_output_format: a whole ELF file, a precompiled header, any text",
          "[unit][build_runner]") {
  TempDir tmp;
  auto check = [&](const std::string& bytes, OutputKind kind) {
    write_file(tmp / "out", bytes);
    UniqueFd fd(::open((tmp / "out").c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    return check_output_format(fd.get(), kind);
  };
  CHECK(check(tiny_elf('a'), OutputKind::shared_library));
  CHECK(check("", OutputKind::object).why() == "it is empty");
  CHECK(check("#!/bin/sh\n", OutputKind::object).why() == "it is not an ELF file");
  std::string cut = tiny_elf('a');
  cut[0x3C] = 10;  // ten section headers, none of them in the file
  cut[0x3A] = 64;
  CHECK(check(cut, OutputKind::shared_library).why().find("cut short") != std::string::npos);
  CHECK(check("gpch013", OutputKind::precompiled_header));
  CHECK(check(tiny_elf('a'), OutputKind::precompiled_header).why() ==
        "it is not a precompiled header");
  CHECK(check("", OutputKind::preprocessed));  // text; may be empty
}

// The hit/miss/store decision over a scripted storage (run/storage.hpp):
// what run_build asks, in which order, and what each answer makes it do.
TEST_CASE("over a storage: a miss asks get then lease, compiles, stores, releases; then a hit",
          "[unit][runner][storage]") {
  RunnerCase c;
  MockStorage storage;
  c.settings.storage = &storage;
  BuildOutcome first = c.build();
  CHECK(first.cache == CacheStatus::miss);
  CHECK(storage.calls == std::vector<std::string>{"get", "lease", "put", "release"});
  CHECK(storage.leases_held == 0);
  REQUIRE(storage.entries.size() == 1);
  CHECK(storage.entries.begin()->second == tiny_elf('a'));
  storage.calls.clear();
  c.fake.tag = 'b';
  BuildOutcome second = c.build();
  CHECK(second.cache == CacheStatus::hit);
  CHECK(storage.calls == std::vector<std::string>{"get"});
  CHECK(c.fake.ran.size() == 1);
  CHECK(read_file(c.plan.output) == tiny_elf('a'));
}

TEST_CASE("over a storage that is down, slow or holds a damaged entry, the build compiles",
          "[unit][runner][storage]") {
  for (Miss miss : {Miss::down, Miss::timeout, Miss::damaged}) {
    RunnerCase c;
    MockStorage storage;
    c.settings.storage = &storage;
    storage.fail_get = miss;
    BuildOutcome outcome = c.build();
    CHECK(outcome.cache == CacheStatus::miss);
    CHECK(c.fake.ran.size() == 1);
    CHECK(read_file(c.plan.output) == tiny_elf('a'));
    CHECK(storage.calls == std::vector<std::string>{"get", "lease", "put", "release"});
  }
}

TEST_CASE("over a storage: another builder's lease gives its entry, and nothing is compiled",
          "[unit][runner][storage]") {
  RunnerCase c;
  MockStorage storage;
  c.settings.storage = &storage;
  storage.other_holds_lease = true;
  storage.arrives = tiny_elf('z');
  BuildOutcome outcome = c.build();
  CHECK(outcome.cache == CacheStatus::hit);
  CHECK(outcome.cache_detail == "remote");
  CHECK(c.fake.ran.empty());
  CHECK(read_file(c.plan.output) == tiny_elf('z'));
  CHECK(storage.calls == std::vector<std::string>{"get", "lease"});
  // Their lease ends with no entry (that builder failed): compiled here.
  storage.arrives.reset();
  storage.calls.clear();
  CHECK(c.build().cache == CacheStatus::miss);
  CHECK(c.fake.ran.size() == 1);
  CHECK(read_file(c.plan.output) == tiny_elf('a'));
}

TEST_CASE("over a storage: a failed compile stores nothing and gives its lease back",
          "[unit][runner][storage]") {
  RunnerCase c;
  MockStorage storage;
  c.settings.storage = &storage;
  c.fake.exit_code = 1;
  CHECK_THROWS_AS(c.build(), Error);
  CHECK(storage.calls == std::vector<std::string>{"get", "lease", "release"});
  CHECK(storage.leases_held == 0);
  CHECK(storage.entries.empty());
}

TEST_CASE("over a storage: a refused store leaves the build done and uncacheable, saying why",
          "[unit][runner][storage]") {
  RunnerCase c;
  MockStorage storage;
  c.settings.storage = &storage;
  storage.refuse_put = "k.cpp changed during the build";
  BuildOutcome outcome = c.build();
  CHECK(outcome.cache == CacheStatus::uncacheable);
  CHECK(outcome.cache_detail == "k.cpp changed during the build");
  CHECK(read_file(c.plan.output) == tiny_elf('a'));
  CHECK(storage.leases_held == 0);
}

TEST_CASE("over a storage whose lease says nothing: a miss says why get missed",
          "[unit][runner][storage]") {
  RunnerCase c;
  MockStorage backend;
  backend.silent_lease = true;
  c.settings.storage = &backend;
  BuildOutcome outcome = c.build();
  CHECK(outcome.cache == CacheStatus::miss);
  CHECK(outcome.cache_detail == "mock: none");
  CHECK(backend.calls == std::vector<std::string>{"get", "lease", "put", "release"});
}

// Issue 46: stats.json tells local hits from remote ones (the remote counts
// its own), and counts uncacheable builds by reason.
TEST_CASE("counters: a remote hit is not a local hit; a refused store is uncacheable, by reason",
          "[unit][runner][storage]") {
  RunnerCase c;
  c.with_cache();
  MockStorage storage;
  c.settings.storage = &storage;
  storage.other_holds_lease = true;
  storage.arrives = tiny_elf('z');
  REQUIRE(c.build().cache == CacheStatus::hit);
  CacheStats after_remote = c.cache->stats();
  CHECK(after_remote.hits == 0);
  CHECK(after_remote.misses == 0);
  storage.other_holds_lease = false;
  storage.refuse_put = "no room";
  c.plan.command.argv.push_back("-DOTHER");  // another key: a miss
  BuildOutcome refused = c.build();
  CHECK(refused.cache == CacheStatus::uncacheable);
  REQUIRE(refused.uncacheable);
  CHECK(*refused.uncacheable == Uncacheable::not_stored);
  CacheStats st = c.cache->stats();
  CHECK(st.hits == 0);
  CHECK(st.misses == 1);
  CHECK(st.uncacheable == 1);
  CHECK(st.uncacheable_by_reason ==
        std::vector<std::pair<std::string, std::uint64_t>>{{"not_stored", 1}});
}

TEST_CASE("a miss says which input of the entry found changed, and a first build that none was",
          "[unit][runner]") {
  RunnerCase c;
  c.with_cache();
  BuildOutcome first = c.build();
  CHECK(first.cache == CacheStatus::miss);
  CHECK_FALSE(first.stale);
  write_file(c.dir / "h.h", "#define H 2\n");
  BuildOutcome second = c.build();
  CHECK(second.cache == CacheStatus::miss);
  REQUIRE(second.stale);
  CHECK(second.stale->kind == StaleKind::file_changed);
  CHECK(second.stale->what == c.dir / "h.h");
  CHECK(c.cache->stats().misses == 2);
  CHECK(c.cache->stats().hits == 0);
}

TEST_CASE("a diagnostic with file:line is a compile failure", "[unit][failure]") {
  FailureAnalysis a = analyze_failure(
      "k.cpp: In function 'int f()':\nk.cpp:1:29: error: expected primary-expression\n", true);
  CHECK(a.step == FailedStep::compile);
  CHECK(a.first_error == "k.cpp:1:29: error: expected primary-expression");
  CHECK(analyze_failure("k.cpp:3: fatal error: acl/acl.h: No such file\n", false).step ==
        FailedStep::compile);
}

TEST_CASE("a missing library is a link failure naming the library", "[unit][failure]") {
  FailureAnalysis a = analyze_failure(
      "/usr/bin/ld: cannot find -lascendcl: No such file or directory\n"
      "/usr/bin/ld: cannot find -ltorch_npu\ncollect2: error: ld returned 1 exit status\n",
      true);
  CHECK(a.step == FailedStep::link);
  CHECK(a.missing_libraries == std::vector<std::string>{"ascendcl", "torch_npu"});
}

TEST_CASE("an undefined reference is a link failure naming the symbol", "[unit][failure]") {
  FailureAnalysis a = analyze_failure(
      "/usr/bin/ld: /tmp/cc.o: in function `f':\nk.cpp:(.text+0x5): undefined reference to "
      "`missing_fn'\ncollect2: error: ld returned 1 exit status\n",
      true);
  CHECK(a.step == FailedStep::link);
  CHECK(a.undefined_symbols == std::vector<std::string>{"missing_fn"});
}

TEST_CASE("a compile error wins over link noise; without linking it is always compile",
          "[unit][failure]") {
  CHECK(analyze_failure("k.cpp:1:1: error: x\ncollect2: error: ld returned 1\n", true).step ==
        FailedStep::compile);
  CHECK(analyze_failure("/usr/bin/ld: cannot find -lx\n", false).step == FailedStep::compile);
  CHECK(analyze_failure("", true).step == FailedStep::compile);  // e.g. the compiler crashed
}

// The one-line error for a failed compiler step: what failed, who asked for
// a missing library, and what became of the output.
namespace {

using kbuild_test::exited;

FailureAnalysis link_failure() {
  FailureAnalysis a;
  a.step = FailedStep::link;
  return a;
}

}  // namespace

TEST_CASE("untouched_output: left as it was, or none written", "[unit][failure_message]") {
  TempDir tmp;
  CHECK(untouched_output(tmp / "k.so") == "; no " + tmp / "k.so" + " written");
  write_file(tmp / "k.so", "old");
  CHECK(untouched_output(tmp / "k.so") == "; " + tmp / "k.so" + " left as it was");
  std::filesystem::create_symlink(tmp / "nowhere", tmp / "dangling.so");
  CHECK(untouched_output(tmp / "dangling.so") == "; " + tmp / "dangling.so" + " left as it was");
}

TEST_CASE("a missing library names who added it and the dirs searched", "[unit][failure_message]") {
  BuildOptions options;
  options.add(OptionList::libraries, "acc_rt",
              Origin{Layer::device, "config acc", "/cfg/a.json", 7});
  options.add(OptionList::libraries_dirs, "/opt/acc/lib",
              Origin{Layer::device, "config acc", "", 0});
  FailureAnalysis a = link_failure();
  a.missing_libraries = {"acc_rt", "other"};
  Error e = toolchain_error(options, "/no/such/k.so", exited(1), a);
  CHECK(e.kind() == ErrorKind::link_failed);
  CHECK(std::string(e.what()) ==
        "link failed: cannot find -lacc_rt (added by config acc, /cfg/a.json:7); cannot find "
        "-lother (added by the passthrough or extra flags); searched -L /opt/acc/lib and the "
        "system's; fix the library dirs or install the library; no /no/such/k.so written");
  Error no_dirs = toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a);
  CHECK_THAT(std::string(no_dirs.what()), Catch::Contains("searched no -L dirs and the system's"));
}

TEST_CASE("undefined references: the first, and how many more", "[unit][failure_message]") {
  FailureAnalysis a = link_failure();
  a.undefined_symbols = {"foo()"};
  CHECK(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a).what()) ==
        "link failed: undefined reference to 'foo()'; a library is missing from the link line; "
        "no /no/k.so written");
  a.undefined_symbols = {"foo()", "bar()", "baz()"};
  CHECK_THAT(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a).what()),
             Catch::Contains("'foo()' and 2 more;"));
}

TEST_CASE("other failures: the stage, how the compiler ended and its first error",
          "[unit][failure_message]") {
  FailureAnalysis link = link_failure();
  link.first_error = "ld: bad relocation";
  CHECK(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), link).what()) ==
        "link failed (exit code 1): ld: bad relocation; no /no/k.so written");
  FailureAnalysis compile;
  compile.first_error = "k.cpp:1:1: error: expected something";
  Error e = toolchain_error(BuildOptions{}, "/no/k.so", exited(1), compile);
  CHECK(e.kind() == ErrorKind::compile_failed);
  CHECK(std::string(e.what()) ==
        "compile failed (exit code 1): k.cpp:1:1: error: expected something; no /no/k.so written");
  ProcessResult killed;
  killed.signal = 9;
  CHECK(
      std::string(toolchain_error(BuildOptions{}, "/no/k.so", killed, FailureAnalysis{}).what()) ==
      "compile failed (killed by signal 9 (Killed)); no /no/k.so written");
}

TEST_CASE("a missing header names the device file whose include dirs lack it",
          "[unit][failure_message]") {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "sdk/include");
  BuildOptions options;
  options.add(OptionList::include_dirs, tmp / "sdk/includ",
              Origin{Layer::device, "config acc", "/cfg/acc.json", 4});
  options.add(OptionList::include_dirs, tmp / "sdk/include",
              Origin{Layer::device, "config acc", "/cfg/acc.json", 5});
  options.add(OptionList::include_dirs, "/torch/include", Origin{Layer::torch, "torch", "", 0});
  const std::string gcc = "k.cpp:1:10: fatal error: acc/acc.h: No such file or directory\n";
  FailureAnalysis a = analyze_failure(gcc, true);
  REQUIRE(a.missing_headers == std::vector<std::string>{"acc/acc.h"});
  CHECK(analyze_failure("k.cpp:1:10: fatal error: 'acc/acc.h' file not found\n", true)
            .missing_headers == std::vector<std::string>{"acc/acc.h"});
  const std::string message = toolchain_error(options, "/no/k.so", exited(1), a).what();
  CHECK(message.rfind("compile failed (exit code 1): " + gcc.substr(0, gcc.size() - 1) +
                          "; acc/acc.h is in none of the include dirs that device files added: " +
                          tmp / "sdk/includ" + " (does not exist; config acc, /cfg/acc.json:4), " +
                          tmp / "sdk/include" + " (config acc, /cfg/acc.json:5); fix " +
                          "include_dirs in /cfg/acc.json, or install the header there",
                      0) == 0);
  CHECK(message.find("/torch/include") == std::string::npos);
  CHECK(message.find("no /no/k.so written") != std::string::npos);
  // Found in one of the device's dirs: the device file is not the cause.
  write_file(tmp / "sdk/include/acc.h", "");
  a.missing_headers = {"acc.h"};
  CHECK(
      std::string(toolchain_error(options, "/no/k.so", exited(1), a).what()).find("device files") ==
      std::string::npos);
  // No device file added include dirs: nothing to blame.
  CHECK(std::string(toolchain_error(BuildOptions{}, "/no/k.so", exited(1), a).what())
            .find("include dirs") == std::string::npos);
}
