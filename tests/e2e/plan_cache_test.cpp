// The plan cache: a warm `kbuild --dry-run` says byte for byte what a cold
// one said, and any change to what went into it is a miss (issue 15's
// start-up target). A hit is told from a miss by marking the stored lines.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

const char* const kKernel = "extern \"C\" int f() { return 1; }\n";

// A home, a torch found through PYTHONPATH, kbuild's data dir copied (so a
// profile can be touched), a device file of our own with a warning in it.
struct PlanScratch {
  TempDir dir;
  std::string home = dir / "home";
  std::string torch = dir / "site/torch";
  std::string data = dir / "data";
  std::string device = dir / "acc.json";
  std::string kernel = dir / "k.cpp";
  std::string output = dir / "k.so";

  PlanScratch() {
    fs::create_directories(home);
    make_fake_torch(torch, false);
    write_file(torch + "/__init__.py", "");
    fs::copy(source_root() + "/configs", data, fs::copy_options::recursive);
    write_file(device, "{\n  \"device\": \"acc\",\n  \"cflags\": [\"-funroll-loops\"]\n}\n");
    write_file(kernel, kKernel);
  }

  std::map<std::string, std::string> environment(std::map<std::string, std::string> set) const {
    set.emplace("HOME", home);
    set.emplace("XDG_CONFIG_HOME", home + "/.config");
    set.emplace("XDG_CACHE_HOME", home + "/.cache");
    set.emplace("PYTHONPATH", dir / "site");
    set.emplace("KBUILD_DATA_DIR", data);
    set.emplace("ASCEND_HOME_PATH", dir / "ascend");
    return set;
  }

  // kbuild ARGS in `cwd` (this directory unless given).
  RunResult kbuild(const std::vector<std::string>& args,
                   std::map<std::string, std::string> set = {}, const std::string& cwd = "") const {
    std::vector<std::string> argv{"/usr/bin/env", "-C", cwd.empty() ? dir.str() : cwd,
                                  kbuild_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> unset;
    for (const char* var :
         {"KBUILD_CONFIG_PATH", "KBUILD_TORCH_ROOT", "KBUILD_TORCH_NPU_ROOT", "KBUILD_CACHE_DIR",
          "CXX", "LIBTORCH_NPU_PATH", "ATEN_CPU_CAPABILITY", "NO_COLOR"})
      if (!set.count(var)) unset.push_back(var);
    return run(argv, environment(std::move(set)), unset);
  }

  // The one plan cache entry ("" when none).
  std::string entry() const {
    const fs::path plans = fs::path(home) / ".cache/kbuild/plans";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(plans, ec)) return e.path().string();
    return "";
  }

  // Runs ARGS until their plan is remembered (inputs are remembered only
  // once two seconds old); returns the first, cold run.
  RunResult warm(const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& set = {}) const {
    RunResult cold = kbuild(args, set);
    std::string line;
    for (const std::string& a : args) line += a + " ";
    INFO("kbuild " << line << "\n" << cold.out << cold.err);
    for (int i = 0; i < 5 && entry().empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2100));
      kbuild(args, set);
    }
    REQUIRE_FALSE(entry().empty());
    return cold;
  }

  // Marks the remembered lines, so that a hit shows ("-SHARED").
  void mark() const {
    std::string bytes = read_file(entry());
    auto at = bytes.rfind(" -shared ");
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 9, " -SHARED ");
    write_file(entry(), bytes);
  }
};

bool hit(const RunResult& r) {
  return r.out.find("-SHARED") != std::string::npos;
}

std::vector<std::string> dry_run(const PlanScratch& s, std::vector<std::string> extra) {
  std::vector<std::string> args{"--dry-run", s.kernel, "-o", s.output};
  args.insert(args.begin(), extra.begin(), extra.end());
  return args;
}

void same(const RunResult& cold, const RunResult& warm) {
  INFO(cold.out << cold.err);
  CHECK(cold.exit_code == 0);
  CHECK(warm.exit_code == cold.exit_code);
  CHECK(warm.out == cold.out);
  CHECK(warm.err == cold.err);
}

}  // namespace

TEST_CASE("a warm dry run says byte for byte what the cold one said", "[e2e][plan-cache]") {
  PlanScratch s;
  std::vector<std::string> extra;
  SECTION("cpu") {
    extra = {"--device", "cpu"};
  }
  SECTION("npu, its notes on stderr") {
    extra = {"--device", "npu"};
  }
  SECTION("a device file's warning on stderr") {
    extra = {"--config", s.device, "--device", "acc"};
  }
  SECTION("--launcher ccache") {
    if (access("/usr/bin/ccache", X_OK) != 0) {
      WARN("no ccache: skipped");
      return;
    }
    extra = {"--device", "npu", "--launcher", "ccache"};
  }
  const std::vector<std::string> args = dry_run(s, extra);
  RunResult cold = s.warm(args);
  same(cold, s.kbuild(args));
  if (extra[1] == "acc") CHECK(cold.err.find("warning: ") != std::string::npos);
  if (extra[1] == "npu") CHECK(cold.err.find("note: ") != std::string::npos);
  s.mark();  // and the run above was a hit
  CHECK(hit(s.kbuild(args)));
}

TEST_CASE("any change to what a dry run read is a miss", "[e2e][plan-cache]") {
  PlanScratch s;
  const std::vector<std::string> args = dry_run(s, {"--config", s.device, "--device", "acc"});
  std::map<std::string, std::string> before, after;
  std::vector<std::string> other_args = args;
  std::string cwd;
  std::function<void()> change = [] {};
  SECTION("the device file edited") {
    change = [&] {
      write_file(s.device, "{\n  \"device\": \"acc\",\n  \"cflags\": [\"-fno-plt\"]\n}\n");
    };
  }
  SECTION("the profile touched") {
    change = [&] { REQUIRE(::utimes((s.data + "/profiles/2.11.json").c_str(), nullptr) == 0); };
  }
  SECTION("torch's version.py changed") {
    change = [&] {
      write_file(s.torch + "/version.py", "__version__ = '2.11.1'\nhip: Optional[str] = None\n");
    };
  }
  SECTION("a consulted variable set") {
    after = {{"NO_COLOR", "1"}};
  }
  SECTION("a consulted variable unset") {
    before = {{"NO_COLOR", "1"}};
  }
  SECTION("another argv") {
    other_args.insert(other_args.begin(), "-v");
  }
  SECTION("another directory") {
    cwd = s.dir / "elsewhere";
    fs::create_directories(cwd);
  }
  s.warm(args, before);
  s.mark();
  REQUIRE(hit(s.kbuild(args, before)));
  change();
  RunResult r = s.kbuild(other_args, after, cwd);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(hit(r));
  if (args == other_args) CHECK(r.out.find("-shared") != std::string::npos);
}

TEST_CASE("a corrupt, hostile or foreign plan cache entry is ignored", "[e2e][plan-cache]") {
  PlanScratch s;
  const std::vector<std::string> args = dry_run(s, {"--device", "cpu"});
  RunResult cold = s.warm(args);
  s.mark();
  const std::string entry = s.entry();
  SECTION("cut short") {
    const std::string bytes = read_file(entry);
    write_file(entry, bytes.substr(0, bytes.size() - 3));
  }
  SECTION("trailing bytes") {
    write_file(entry, read_file(entry) + "x");
  }
  SECTION("world-writable") {
    REQUIRE(::chmod(entry.c_str(), 0646) == 0);
  }
  SECTION("its directory world-writable") {
    REQUIRE(::chmod(fs::path(entry).parent_path().c_str(), 0777) == 0);
  }
  SECTION("a link to a marked entry") {
    fs::rename(entry, s.dir / "elsewhere.bin");
    fs::create_symlink(s.dir / "elsewhere.bin", entry);
  }
  SECTION("another user's") {
    if (::geteuid() != 0) {
      WARN("not root: cannot give the entry away");
      return;
    }
    REQUIRE(::chown(entry.c_str(), 65534, 65534) == 0);
  }
  RunResult r = s.kbuild(args);
  CHECK_FALSE(hit(r));
  same(cold, r);
}

TEST_CASE("a source that was there when the plan was remembered and is gone now is a miss",
          "[e2e][plan-cache]") {
  PlanScratch s;
  // A source named like a subcommand is taken only while it exists.
  write_file(s.dir / "devics", kKernel);
  const std::vector<std::string> args{"--dry-run", "--device", "cpu", "-o", s.output, "devics"};
  s.warm(args);
  s.mark();
  REQUIRE(hit(s.kbuild(args)));
  fs::remove(s.dir / "devics");
  RunResult r = s.kbuild(args);
  INFO(r.out << r.err);
  CHECK_FALSE(hit(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("did you mean the subcommand 'devices'?") != std::string::npos);
}

TEST_CASE("a dry run with --pch is never remembered: the .gch's reuse rests on its headers",
          "[e2e][plan-cache]") {
  PlanScratch s;
  write_file(s.dir / "mine.h", "#define MINE 1\n");
  write_file(s.dir / "prefix.h", "#include \"" + s.dir / "mine.h" + "\"\n");
  const std::vector<std::string> build{
      "--device", "cpu", "--compile-only", "--pch", s.dir / "prefix.h",
      s.kernel,   "-o",  s.dir / "k.o"};
  REQUIRE(s.kbuild(build).exit_code == 0);  // the .gch is in the cache now
  std::vector<std::string> args = build;
  args.insert(args.begin(), "--dry-run");
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  RunResult first = s.kbuild(args);
  REQUIRE(first.out.find("# reuse ") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  s.kbuild(args);
  CHECK(s.entry().empty());
  // What the .gch was built from changed: it is built again, as a cold run says.
  write_file(s.dir / "mine.h", "#define MINE 2\n");
  RunResult after = s.kbuild(args);
  INFO(after.out << after.err);
  CHECK(after.out.find("# reuse ") == std::string::npos);
  CHECK(after.out.find("-x c++-header") != std::string::npos);
}

TEST_CASE("another group set is another entry: reading a file may depend on it",
          "[e2e][plan-cache]") {
  if (::geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
    WARN("needs root and setpriv: skipped");
    return;
  }
  PlanScratch s;
  // Readable by group 4321 only; the cache belongs to the user running kbuild.
  REQUIRE(::chmod(s.dir.path().c_str(), 0755) == 0);
  REQUIRE(::chown(s.device.c_str(), 0, 4321) == 0);
  REQUIRE(::chmod(s.device.c_str(), 0640) == 0);
  fs::create_directories(s.dir / "cache");
  REQUIRE(::chown((s.dir / "cache").c_str(), 65534, 65534) == 0);
  for (const char* sub : {"/k.cpp", "/data", "/site", "/home"}) {
    std::error_code ec;
    fs::permissions(s.dir / sub, fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::add, ec);
  }
  auto as_nobody = [&](const std::string& groups) {
    std::vector<std::string> argv{"/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534"};
    if (groups.empty())
      argv.push_back("--clear-groups");
    else
      argv.insert(argv.end(), {"--groups", groups});
    argv.insert(argv.end(), {kbuild_binary(), "--dry-run", "--no-torch", "--config", s.device,
                             "--device", "acc", s.kernel, "-o", s.dir / "k.so"});
    return run(argv, {{"PATH", "/usr/bin:/bin"},
                      {"KBUILD_CACHE_DIR", s.dir / "cache"},
                      {"HOME", s.dir / "cache"}});
  };
  RunResult cold = as_nobody("4321");
  INFO(cold.out << cold.err);
  REQUIRE(cold.exit_code == 0);
  bool remembered = false;
  for (int i = 0; i < 5 && !remembered; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    as_nobody("4321");
    std::error_code ec;
    remembered = fs::directory_iterator(s.dir / "cache/plans", ec) != fs::directory_iterator();
  }
  REQUIRE(remembered);
  RunResult without = as_nobody("");
  INFO(without.out << without.err);
  CHECK(without.exit_code == 3);  // cannot read the device file
  CHECK(without.out.empty());
}
