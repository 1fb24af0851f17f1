// The observer (src/observer/observer.c) itself: tests/observer/observer_probe.c
// calls every function it intercepts with the real library preloaded, and
// this test reads the raw records (its own reading of the format the
// observer's header gives, not kbuild's reader) for each call's record.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>

#include "../support/test_support.hpp"

using namespace kbuild_test;
namespace fs = std::filesystem;

namespace {

struct ObserverRecords {
  std::set<std::pair<char, std::string>> records;        // kind, payload
  std::map<std::string, std::set<std::string>> pids_of;  // "X path" / "P exe" -> pids
  std::size_t files = 0;
  bool has(char kind, const std::string& payload) const {
    return records.count({kind, payload}) != 0;
  }
};

std::string observer_library_path() {
  return (fs::path(kbuild_binary()).parent_path() / "libkbuild-observer.so").string();
}

ObserverRecords read_observer_records(const fs::path& dir) {
  ObserverRecords out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    ++out.files;
    const std::string bytes = read_file(e.path());
    std::size_t at = 0;
    while (at < bytes.size()) {
      const std::size_t end = bytes.find('\0', at);
      REQUIRE(end != std::string::npos);  // every record whole
      const std::string record = bytes.substr(at, end - at);
      at = end + 1;
      const std::size_t blank = record.find(' ');
      REQUIRE(blank != std::string::npos);
      const std::string pid = record.substr(1, blank - 1);
      const std::string payload = record.substr(blank + 1);
      out.records.insert({record[0], payload});
      out.pids_of[std::string(1, record[0]) + " " + payload].insert(pid);
    }
  }
  return out;
}

struct ProbeRun {
  TempDir dir, records;
  ObserverRecords seen;
  std::string probe;
  RunResult result;
  ProbeRun() {
    probe = (fs::read_symlink("/proc/self/exe").parent_path() / "observer_probe").string();
    REQUIRE(fs::exists(probe));
    REQUIRE(fs::exists(observer_library_path()));
    for (const char* name :
         {"read-open", "read-open64", "read-openat", "read-openat64", "read-open_2",
          "read-open64_2", "read-openat_2", "read-openat64_2", "read-fopen", "read-fopen64",
          "read-freopen", "read-freopen64", "read-after-fchdir", "sub/read-after-chdir"})
      write_file(dir / name, "x\n");
    fs::create_directories(dir / "listed-opendir");
    fs::create_directories(dir / "listed-scandir");
    result = run({probe, dir.str(), probe},
                 {{"LD_PRELOAD", observer_library_path()},
                  {"KBUILD_OBSERVE_DIR", records.str()},
                  {"KBUILD_OBSERVE_CWD", fs::current_path().string()},
                  {"PROBE_SET", "yes"},
                  {"LANG", "C.UTF-8"}},
                 {"LC_ALL", "PROBE_UNSET", "PROBE_SECURE"});
    seen = read_observer_records(records.path());
  }
};

}  // namespace

TEST_CASE("the observer records every open, fopen and creat: read, written, absent",
          "[e2e][observer]") {
  ProbeRun p;
  INFO(p.result.err);
  REQUIRE(p.result.exit_code == 0);
  for (const char* name : {"read-open", "read-open64", "read-openat", "read-openat64",
                           "read-open_2", "read-open64_2", "read-openat_2", "read-openat64_2",
                           "read-fopen", "read-fopen64", "read-freopen", "read-freopen64"}) {
    INFO(name);
    CHECK(p.seen.has('R', p.dir / name));
  }
  for (const char* name : {"written-open", "written-creat", "written-creat64", "written-fopen",
                           "written-rename", "written-renameat"}) {
    INFO(name);
    CHECK(p.seen.has('W', p.dir / name));
  }
  for (const char* name : {"absent-open", "absent-openat", "absent-fopen"}) {
    INFO(name);
    CHECK(p.seen.has('A', p.dir / name));
  }
  CHECK_FALSE(p.seen.has('R', p.dir / "absent-open"));
}

TEST_CASE("the observer records every failed lookup: the stat, access and realpath families",
          "[e2e][observer]") {
  ProbeRun p;
  REQUIRE(p.result.exit_code == 0);
  for (const char* name :
       {"absent-stat", "absent-lstat", "absent-stat64", "absent-lstat64", "absent-fstatat",
        "absent-fstatat64", "absent-statx", "absent-access", "absent-euidaccess", "absent-eaccess",
        "absent-faccessat", "absent-realpath", "absent-readlink", "absent-opendir"}) {
    INFO(name);
    CHECK(p.seen.has('A', p.dir / name));
  }
  // __xstat: only where libc still has it for older programs.
  if (dlsym(RTLD_DEFAULT, "__xstat")) CHECK(p.seen.has('A', p.dir / "absent-xstat"));
}

TEST_CASE("the observer records listings, dlopen, and the variables asked for with their values",
          "[e2e][observer]") {
  ProbeRun p;
  REQUIRE(p.result.exit_code == 0);
  CHECK(p.seen.has('L', p.dir / "listed-opendir"));
  CHECK(p.seen.has('L', p.dir / "listed-scandir"));
  bool libm = false;
  for (const auto& [kind, payload] : p.seen.records)
    libm = libm || (kind == 'R' && payload.find("libm.so.6") != std::string::npos);
  CHECK(libm);
  CHECK(p.seen.has('E', "PROBE_SET=yes"));
  CHECK(p.seen.has('N', "PROBE_UNSET"));
  CHECK(p.seen.has('N', "PROBE_SECURE"));
  // setlocale(LC_ALL, "") reads these inside libc, where getenv is not seen.
  CHECK(p.seen.has('E', "LANG=C.UTF-8"));
  CHECK(p.seen.has('N', "LC_ALL"));
  // The observer's own variables are never recorded.
  for (const auto& [kind, payload] : p.seen.records)
    CHECK(payload.rfind("KBUILD_OBSERVE_", 0) != 0);
}

TEST_CASE("the observer records every exec and spawn, and each program image reports in",
          "[e2e][observer]") {
  ProbeRun p;
  REQUIRE(p.result.exit_code == 0);
  const std::string probe = fs::canonical(p.probe).string();
  // Eight exec calls and two spawns of the probe: each recorded, and each
  // started image reported in under the pid the exec was recorded with.
  REQUIRE(p.seen.has('X', p.probe));
  const std::set<std::string>& exec_pids = p.seen.pids_of["X " + p.probe];
  const std::set<std::string>& images = p.seen.pids_of["P " + probe];
  CHECK(exec_pids.size() >= 9);  // fexecve names the file by its descriptor
  CHECK(images.size() == 11);    // the probe itself, then ten children
  for (const std::string& pid : exec_pids) {
    INFO("exec recorded under pid " << pid);
    CHECK(images.count(pid) == 1);
  }
  // A failed exec: tried, then failed.
  CHECK(p.seen.has('X', p.dir / "absent-program"));
  CHECK(p.seen.has('F', p.dir / "absent-program"));
  // Each image's loaded libraries are read.
  bool libc = false;
  for (const auto& [kind, payload] : p.seen.records)
    libc = libc || (kind == 'R' && payload.find("libc.so.6") != std::string::npos);
  CHECK(libc);
}

TEST_CASE("after chdir the observer records absolute paths; records never interleave",
          "[e2e][observer]") {
  ProbeRun p;
  REQUIRE(p.result.exit_code == 0);
  CHECK(p.seen.has('R', p.dir / "sub/read-after-chdir"));
  CHECK(p.seen.has('R', p.dir / "read-after-fchdir"));
  CHECK_FALSE(p.seen.has('R', "read-after-chdir"));
  // One file per program image: the probe and its ten children.
  CHECK(p.seen.files == 11);
}

TEST_CASE("without KBUILD_OBSERVE_DIR the observer records nothing and changes nothing",
          "[e2e][observer]") {
  TempDir dir;
  const std::string probe =
      (fs::read_symlink("/proc/self/exe").parent_path() / "observer_probe").string();
  fs::create_directories(dir / "listed-opendir");
  RunResult r = run({probe, dir.str(), probe}, {{"LD_PRELOAD", observer_library_path()}},
                    {"KBUILD_OBSERVE_DIR"});
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir / "written-open"));  // the calls did what they do
}
