// check_load through a fake process runner: the loader's argv, the
// LD_LIBRARY_PATH it gets, and how its answer is read (no library loads).
#include <catch2/catch.hpp>

#include "../support/fake_process_runner.hpp"
#include "../support/test_support.hpp"
#include "run/load_check.hpp"

using namespace kbuild;
using kbuild_test::exited;
using Strings = std::vector<std::string>;

namespace {

class FakeLoader : public ProcessRunner {
 public:
  Strings argv;
  std::optional<std::string> library_path;
  ProcessResult answer;
  int runs = 0;
  // The first run's argv and variable (a second, without the variable, asks
  // whether the library also loads so).
  ProcessResult run(const Strings& a, const ProcessRequest& options) override {
    if (runs++ == 0) {
      argv = a;
      if (options.environment) library_path = options.environment->get("LD_LIBRARY_PATH");
    }
    return answer;
  }
};

LoadCheckSettings settings(Strings symbols = {}) {
  LoadCheckSettings s;
  s.enabled = true;
  s.loader = {"/lib/kbuild-load-check", "--quiet"};
  s.required_symbols = std::move(symbols);
  return s;
}

}  // namespace

TEST_CASE("the loader gets the library, then each required symbol", "[unit][load_check]") {
  FakeLoader fake;
  fake.answer = exited(0, "");
  LoadCheckResult r = check_load(settings({"kernel", "init"}), "/o/k.so", {}, Environment(), fake);
  CHECK(r.ok);
  CHECK(r.message.empty());
  CHECK(fake.argv == Strings{"/lib/kbuild-load-check", "--quiet", "/o/k.so", "kernel", "init"});
  CHECK_FALSE(fake.library_path);  // nothing to add: left as it was
}

TEST_CASE("the link's library dirs come first on LD_LIBRARY_PATH", "[unit][load_check]") {
  FakeLoader fake;
  fake.answer = exited(0, "");
  Environment env{{{"LD_LIBRARY_PATH", "/old"}}};
  (void)check_load(settings(), "k.so", {"/a", "/b"}, env, fake);
  CHECK(fake.library_path == std::optional<std::string>("/a:/b:/old"));
  fake.runs = 0;
  (void)check_load(settings(), "k.so", {}, env, fake);
  CHECK(fake.library_path == std::optional<std::string>("/old"));
  Environment empty{{{"LD_LIBRARY_PATH", ""}}};
  fake.runs = 0;
  (void)check_load(settings(), "k.so", {"/a"}, empty, fake);
  CHECK(fake.library_path == std::optional<std::string>("/a"));  // no empty entry (= cwd)
}

TEST_CASE("undefined and missing symbols are read out of the loader's answer",
          "[unit][load_check]") {
  FakeLoader fake;
  fake.answer = exited(1,
                       "/o/k.so: undefined symbol: _Z3foov, version X\n"
                       "missing symbol: kernel\n"
                       "missing symbol: init\n\n");
  LoadCheckResult r = check_load(settings({"kernel", "init"}), "/o/k.so", {}, Environment(), fake);
  CHECK_FALSE(r.ok);
  CHECK(r.undefined_symbols == Strings{"_Z3foov"});
  CHECK(r.missing_symbols == Strings{"kernel", "init"});
  CHECK(r.message ==
        "/o/k.so: undefined symbol: _Z3foov, version X\nmissing symbol: kernel\nmissing symbol: "
        "init");
}

TEST_CASE("a loader that dies silently is a failure that says so", "[unit][load_check]") {
  FakeLoader fake;
  fake.answer.signal = 11;
  LoadCheckResult r = check_load(settings(), "k.so", {}, Environment(), fake);
  CHECK_FALSE(r.ok);
  CHECK(r.message == "the load check itself failed (killed by signal 11 (Segmentation fault))");
  fake.answer = exited(1, "");
  CHECK(check_load(settings(), "k.so", {}, Environment(), fake).message ==
        "the load check itself failed (exit code 1)");
}

TEST_CASE("a library that loads only through LD_LIBRARY_PATH is said to", "[unit][load_check]") {
  // The loader fails when the variable is unset, as a library without
  // RUNPATH whose dependency lies in a library dir does.
  class PathLoader : public ProcessRunner {
   public:
    int runs = 0;
    ProcessResult run(const Strings&, const ProcessRequest& options) override {
      ++runs;
      const bool has = options.environment && options.environment->get("LD_LIBRARY_PATH");
      return has ? exited(0, "") : exited(1, "libacc.so.1: cannot open shared object file\n");
    }
  };
  PathLoader fake;
  LoadCheckResult r = check_load(settings(), "/o/k.so", {"/sdk/lib"}, Environment(), fake);
  CHECK(r.ok);
  CHECK(fake.runs == 2);
  CHECK(r.only_with_library_path == "libacc.so.1: cannot open shared object file");
  // Nothing added to the variable: one load, nothing to say.
  PathLoader plain;
  LoadCheckResult alone = check_load(settings(), "/o/k.so", {}, Environment(), plain);
  CHECK(plain.runs == 1);
  CHECK_FALSE(alone.ok);
  CHECK(alone.only_with_library_path.empty());
  // The second load keeps the variable as the user set it: only the dirs
  // the check added are taken away.
  PathLoader kept;
  LoadCheckResult user = check_load(settings(), "/o/k.so", {"/sdk/lib"},
                                    Environment{{{"LD_LIBRARY_PATH", "/user/lib"}}}, kept);
  CHECK(kept.runs == 2);
  CHECK(user.ok);
  CHECK(user.only_with_library_path.empty());
}

// Issue 46 (H2): --check-load=strict loads as this process would, and a
// library that needs the link's dirs on LD_LIBRARY_PATH fails.
TEST_CASE("strict: loaded with this environment only; needing the link's dirs is a failure",
          "[unit][load_check]") {
  class DirLoader : public ProcessRunner {
   public:
    std::vector<std::optional<std::string>> paths;  // LD_LIBRARY_PATH of each run
    ProcessResult run(const Strings&, const ProcessRequest& options) override {
      std::optional<std::string> path =
          options.environment ? options.environment->get("LD_LIBRARY_PATH") : std::nullopt;
      paths.push_back(path);
      const bool has = path && path->find("/sdk/lib") != std::string::npos;
      return has ? exited(0, "") : exited(1, "libacc.so.1: cannot open shared object file\n");
    }
  };
  LoadCheckSettings strict = settings();
  strict.strict = true;
  DirLoader needs;
  LoadCheckResult r = check_load(strict, "/o/k.so", {"/sdk/lib"}, Environment(), needs);
  CHECK_FALSE(r.ok);
  CHECK(r.needs_library_path);
  REQUIRE(needs.paths.size() == 2);
  CHECK_FALSE(needs.paths[0]);  // first as this process has it
  CHECK(needs.paths[1] == "/sdk/lib");
  CHECK(r.message.find("/o/k.so loads only with the link's library dirs (/sdk/lib)") !=
        std::string::npos);
  CHECK(r.message.find("libacc.so.1: cannot open shared object file") != std::string::npos);
  // The user's own LD_LIBRARY_PATH that holds the dir: it loads.
  DirLoader theirs;
  LoadCheckResult ok = check_load(strict, "/o/k.so", {"/sdk/lib"},
                                  Environment{{{"LD_LIBRARY_PATH", "/sdk/lib"}}}, theirs);
  CHECK(ok.ok);
  CHECK(theirs.paths.size() == 1);
  CHECK(ok.only_with_library_path.empty());
  // The hint is what a device file's ldflags take: no leading '-'.
  const std::string hint = rpath_hint({"/sdk/lib", "/x/lib"});
  CHECK(hint.find("\"ldflags\": [\"Wl,-rpath,/sdk/lib\", \"Wl,-rpath,/x/lib\"]") !=
        std::string::npos);
  CHECK(hint.find("--extra-flags '-Wl,-rpath,/sdk/lib -Wl,-rpath,/x/lib'") != std::string::npos);
}

TEST_CASE("undefined_symbol_hint: the symbol demangled, the libraries, the dirs and RUNPATHs",
          "[unit][load_check]") {
  BuildOptions options;
  options.add(OptionList::libraries, "acc_rt", Origin{Layer::device, "config acc", "/a.json", 4});
  options.add(OptionList::libraries_dirs, "/opt/acc/lib",
              Origin{Layer::device, "config acc", "", 0});
  options.add(OptionList::ldflags, "Wl,-rpath,/opt/acc/lib:/opt/acc/lib64",
              Origin{Layer::device, "config acc", "/a.json", 5});
  const std::string hint = undefined_symbol_hint(options, {"_Z10acc_launchi", "acc_stop"});
  CHECK(hint.rfind("acc_launch(int) (and 1 more undefined) is defined by none of the libraries "
                   "the link named (-lacc_rt, added by config acc, /a.json:4); searched -L "
                   "/opt/acc/lib, RUNPATH /opt/acc/lib, /opt/acc/lib64 and the system's dirs: ",
                   0) == 0);
  CHECK(hint.find("grep '_Z10acc_launchi'") != std::string::npos);
  CHECK(undefined_symbol_hint(BuildOptions{}, {"acc_stop"})
            .rfind("acc_stop is defined by none of the libraries the link named (none); searched "
                   "the system's dirs",
                   0) == 0);
  CHECK(undefined_symbol_hint(options, {}).empty());
}

// probe_library, the load check's child side, on a library every system
// has (libm): no kernel is built here.
TEST_CASE("a library that loads with every symbol asked for", "[unit][library_probe]") {
  std::string message;
  CHECK(probe_library("libm.so.6", {"cos", "sin"}, message) == 0);
  CHECK(message.empty());
  CHECK(probe_library("libm.so.6", {}, message) == 0);
}

TEST_CASE("each missing symbol is one line", "[unit][library_probe]") {
  std::string message;
  CHECK(probe_library("libm.so.6", {"cos", "no_such_a", "no_such_b"}, message) == 1);
  CHECK(message == "missing symbol: no_such_a\nmissing symbol: no_such_b");
}

TEST_CASE("a library that does not load: the loader's reason", "[unit][library_probe]") {
  kbuild_test::TempDir tmp;
  kbuild_test::write_file(tmp / "fake.so", "not an ELF file");
  std::string message;
  CHECK(probe_library(tmp / "fake.so", {"f"}, message) == 1);
  CHECK_THAT(message, Catch::Contains(tmp / "fake.so"));
  message.clear();
  CHECK(probe_library(tmp / "missing.so", {}, message) == 1);
  CHECK_THAT(message, Catch::Contains("missing.so"));
}
