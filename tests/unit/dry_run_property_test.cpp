// The property issue 44 asks of a dry run: over a matrix of requests (devices
// × aot × compile-only × --pch × a launcher × remote cache settings), the
// lines a dry run prints are the argv the run then executes, as a fake
// process runner records them.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "../support/fake_observation.hpp"
#include "../support/test_support.hpp"
#include "driver/driver.hpp"
#include "util/text.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
namespace fs = std::filesystem;

namespace {

// Plays the compiler: records each argv, writes what -o names (a .gch or an
// ELF file the runner accepts) and the observer's records of reading the
// files it was given.
class DryRunPropertyCompiler : public ProcessRunner {
 public:
  std::vector<std::vector<std::string>> ran;
  ProcessResult run(const std::vector<std::string>& argv, const ProcessRequest& options) override {
    ran.push_back(argv);
    kbuild_test::FakeRecords records;
    for (std::size_t i = 0; i < argv.size(); ++i) {
      std::error_code ec;
      if (i > 0 && argv[i - 1] != "-o" && fs::is_regular_file(argv[i], ec))
        records.read.push_back(fs::absolute(argv[i]).string());
      if (argv[i] == "-o" && i + 1 < argv.size()) write_output(argv[i + 1]);
    }
    kbuild_test::write_fake_records(options, argv[0], records);
    ProcessResult result;
    result.exited = true;
    result.exit_code = 0;
    return result;
  }

 private:
  static void write_output(const std::string& path) {
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".gch") == 0) {
      kbuild_test::write_file(path, "gpch" + std::string(60, 'x'));
      return;
    }
    std::string elf(64, '\0');
    elf.replace(0, 4,
                "\x7f"
                "ELF");
    elf[4] = 2;  // 64-bit
    elf[5] = 1;  // little-endian
    kbuild_test::write_file(path, elf);
  }
};

// An executed argv as the plan names it: a program found on PATH by its
// name, a file of the build's private work directory (.NAME.kbuild-tmp.X/)
// by its place beside the output.
std::vector<std::string> dry_run_property_as_planned(const std::vector<std::string>& ran,
                                                     const std::vector<std::string>& planned) {
  std::vector<std::string> argv = ran;
  for (std::size_t i = 0; i < argv.size() && i < planned.size(); ++i) {
    const fs::path word(argv[i]);
    const bool found_on_path = planned[i].find('/') == std::string::npos && word.is_absolute() &&
                               word.filename() == planned[i];
    const bool in_work_dir =
        word.parent_path().filename().string().find(".kbuild-tmp.") != std::string::npos &&
        fs::path(planned[i]).filename() == word.filename() &&
        fs::absolute(fs::path(planned[i])).parent_path() == word.parent_path().parent_path();
    if (found_on_path || in_work_dir) argv[i] = planned[i];
  }
  return argv;
}

struct DryRunPropertyCase {
  std::string device;
  bool aot = false, compile_only = false, pch = false;
  std::string launcher;
  std::string remote;
  bool readonly = false;
  std::string name() const {
    return device + (aot ? " aot" : "") + (compile_only ? " -c" : "") + (pch ? " --pch" : "") +
           (launcher.empty() ? "" : " --launcher " + launcher) +
           (remote.empty() ? "" : " --remote-cache " + remote) +
           (readonly ? " --remote-cache-readonly" : "");
  }
};

std::vector<DryRunPropertyCase> dry_run_property_matrix() {
  std::vector<DryRunPropertyCase> cases;
  for (const char* device : {"cpu", "cuda", "acc"})
    for (bool aot : {false, true})
      for (bool compile_only : {false, true})
        for (bool pch : {false, true})
          for (const char* launcher : {"", "ccache"})
            for (int remote = 0; remote < 3; ++remote)
              cases.push_back({device, aot, compile_only, pch, launcher,
                               remote ? "redis://127.0.0.1:1" : "", remote == 2});
  return cases;
}

struct DryRunPropertyListener : BuildListener {
  void warnings(const std::vector<std::string>&) override {}
  void notes(const std::vector<std::string>&) override {}
  void plan_notes(const std::vector<std::string>&) override {}
  void info(const std::string&) override {}
};

// Where one case runs: a kernel, a header, a device file whose launcher is
// a wrapper of its own, a cache directory.
struct DryRunPropertyScratch {
  TempDir tmp;
  Environment env = Environment::from_process();
  SessionRequest options;
  DryRunPropertyScratch() {
    kbuild_test::write_file(tmp / "k.cpp", "int f() { return 1; }\n");
    kbuild_test::write_file(tmp / "pre.h", "#define PRE 1\n");
    kbuild_test::write_file(tmp / "wrap", "#!/bin/sh\nexec \"$@\"\n", true);
    kbuild_test::write_file(tmp / "acc.json",
                            R"({"device": "acc", "launcher": ")" + tmp / "wrap" + R"("})");
    kbuild_test::write_file(tmp / "observer.so", "");  // the fake writes the records
    env.set("KBUILD_DATA_DIR", std::string(std::getenv("KBUILD_SOURCE_ROOT")) + "/configs");
    env.set("KBUILD_CACHE_DIR", tmp / "cache");
    env.unset("KBUILD_REMOTE_CACHE");
    env.unset("KBUILD_LAUNCHER");
    options.site.no_torch = true;
    options.device_files = {tmp / "acc.json"};
  }
  BuildRequest job(const DryRunPropertyCase& c, bool dry_run) const {
    BuildRequest job;
    job.query = DeviceQuery{c.device, c.aot, c.compile_only, ""};
    job.kind = c.compile_only ? OutputKind::object : OutputKind::shared_library;
    job.sources = {tmp / "k.cpp"};
    job.output = tmp / (c.compile_only ? "k.o" : "k.so");
    job.use_torch = false;
    job.dry_run = dry_run;
    job.launcher = c.launcher;
    if (c.pch) job.pch = tmp / "pre.h";
    job.remote_cache = c.remote;
    job.remote_cache_readonly = c.readonly;
    return job;
  }
};

}  // namespace

namespace {

// The command lines of a dry run of `job` (its `# ...` lines are no
// commands), as argv.
std::vector<std::vector<std::string>> dry_run_property_printed(Session& session,
                                                               const BuildRequest& job,
                                                               const DryRunPropertyScratch& scratch,
                                                               ProcessRunner& compiler) {
  DryRunPropertyListener listener;
  Compilation dry = plan_compilation(session, job, listener);
  dry.settings.processes = &compiler;
  dry.settings.observer = scratch.tmp / "observer.so";
  run_compilation(dry, listener, scratch.env);
  std::vector<std::vector<std::string>> printed;
  for (const std::string& line : dry_run_lines(dry, false))
    if (line.rfind("# ", 0) != 0) printed.push_back(*shell_split(line));
  return printed;
}

// What the run of `job` executed, in order.
std::vector<std::vector<std::string>> dry_run_property_ran(Session& session,
                                                           const BuildRequest& job,
                                                           const DryRunPropertyScratch& scratch) {
  DryRunPropertyListener listener;
  DryRunPropertyCompiler compiler;
  Compilation run = plan_compilation(session, job, listener);
  run.settings.processes = &compiler;
  run.settings.observer = scratch.tmp / "observer.so";
  run_compilation(run, listener, scratch.env);
  return compiler.ran;
}

}  // namespace

TEST_CASE("over a matrix of requests, a dry run prints the argv the run executes",
          "[dry_run_property]") {
  for (const DryRunPropertyCase& c : dry_run_property_matrix()) {
    INFO("case: " << c.name());
    DryRunPropertyScratch scratch;
    Session session(scratch.options, scratch.env);
    DryRunPropertyCompiler nothing;
    // A cold cache: every printed step runs, in order.
    std::vector<std::vector<std::string>> printed =
        dry_run_property_printed(session, scratch.job(c, true), scratch, nothing);
    CHECK(nothing.ran.empty());  // a dry run runs nothing
    std::vector<std::vector<std::string>> ran =
        dry_run_property_ran(session, scratch.job(c, false), scratch);
    REQUIRE(ran.size() == printed.size());
    for (std::size_t i = 0; i < ran.size(); ++i)
      CHECK(shell_join(dry_run_property_as_planned(ran[i], printed[i])) == shell_join(printed[i]));
    // A warm one: what runs is what was printed, in order, less the cache's
    // hits (a header printed as reused is not built again).
    printed = dry_run_property_printed(session, scratch.job(c, true), scratch, nothing);
    ran = dry_run_property_ran(session, scratch.job(c, false), scratch);
    std::size_t at = 0;
    for (const std::vector<std::string>& argv : ran) {
      INFO("ran: " << shell_join(argv));
      while (at < printed.size() && dry_run_property_as_planned(argv, printed[at]) != printed[at])
        ++at;
      CHECK(at < printed.size());
      ++at;
    }
  }
}
