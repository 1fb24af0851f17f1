// build-many: the manifest (validated with file:line:column and key path)
// and running its jobs N at a time, here through a fake kbuild (a shell
// script: no compiler runs).
#include "kbuild/batch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "util/json.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
using Strings = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

std::vector<BatchJob> load(const TempDir& tmp, const std::string& text) {
  write_file(tmp / "m.json", text);
  return load_build_list(tmp / "m.json");
}

Error manifest_error(const TempDir& tmp, const std::string& text) {
  try {
    (void)load(tmp, text);
  } catch (const Error& e) {
    return e;
  }
  FAIL("accepted " << text);
  return Error(ErrorKind::internal, "");
}

// A fake kbuild: its first argument says what to do. `hold` says it started
// (its pid, on the FIFO kbuild.sh.started) and waits until the test opens
// its gate (the FIFO kbuild.sh.gate.PID): the test decides when each ends.
Strings fake_kbuild(const TempDir& tmp) {
  // ls's errors go nowhere: another job's directory may go between the glob
  // and ls, and its message would land in this job's output.
  write_file(tmp / "kbuild.sh",
             "mkdir \"$0.running.$$\"; ls -d \"$0\".running.* 2>/dev/null | wc -l >> \"$0.seen\"\n"
             "case \"$1\" in\n"
             "  fail) echo \"bad $2\" >&2; code=3;;\n"
             "  kill) rmdir \"$0.running.$$\"; kill -9 $$;;\n"
             "  hold) mkfifo \"$0.gate.$$\"; echo $$ > \"$0.started\"; read go < \"$0.gate.$$\"\n"
             "        rm \"$0.gate.$$\"; code=0;;\n"
             "  *) echo \"built $2\"; code=0;;\n"
             "esac\n"
             "rmdir \"$0.running.$$\"; exit $code\n");
  return {"/bin/sh", tmp / "kbuild.sh"};
}

// The test's side of `hold`: the FIFO the jobs say they started on (opened
// for reading and writing, so that it never reads as ended between jobs).
class HeldJobs {
 public:
  explicit HeldJobs(const TempDir& tmp) : script_(tmp / "kbuild.sh") {
    REQUIRE(::mkfifo((script_ + ".started").c_str(), 0600) == 0);
    started_ = ::open((script_ + ".started").c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(started_ >= 0);
  }
  ~HeldJobs() { ::close(started_); }
  HeldJobs(const HeldJobs&) = delete;
  HeldJobs& operator=(const HeldJobs&) = delete;
  // The pid of the next job that started (waited for: an event, bounded so
  // that a runner that never starts it fails instead of hanging).
  int next_started() {
    struct pollfd ready {
      started_, POLLIN, 0
    };
    REQUIRE(::poll(&ready, 1, 60'000) == 1);
    std::string line;
    char c = 0;
    while (::read(started_, &c, 1) == 1 && c != '\n') line += c;
    return std::stoi(line);
  }
  // Lets job `pid` finish (opening its gate waits until it reads it).
  void release(int pid) { write_file(script_ + ".gate." + std::to_string(pid), "go\n"); }

 private:
  std::string script_;
  int started_ = -1;
};

BatchJob job(const std::string& name, Strings args) {
  return BatchJob{name, std::move(args)};
}

}  // namespace

TEST_CASE("a manifest: common arguments first, names from -o or given, else numbered",
          "[unit][batch]") {
  TempDir tmp;
  std::vector<BatchJob> jobs = load(tmp, R"({"common": ["--device", "cpu"],
    "builds": [["a.cpp", "-o", "a.so"], {"name": "second", "args": ["b.cpp"]}, ["c.cpp"]]})");
  REQUIRE(jobs.size() == 3);
  CHECK(jobs[0].args == Strings{"--device", "cpu", "a.cpp", "-o", "a.so"});
  CHECK(jobs[0].name == "a.so");
  CHECK(jobs[1].name == "second");
  CHECK(jobs[1].args == Strings{"--device", "cpu", "b.cpp"});
  CHECK(jobs[2].name == "job 3");
  CHECK(load(tmp, R"({"builds": []})").empty());
}

TEST_CASE("a malformed manifest is a config error at file:line:column and key path",
          "[unit][batch]") {
  TempDir tmp;
  const std::string m = tmp / "m.json";
  const std::vector<std::pair<std::string, std::string>> bad{
      {"[]", m + ":1:1: at /: expected an object with \"builds\""},
      {R"({"common": []})", ": at /: \"builds\" must be an array"},
      {R"({"builds": [], "extra": 1})", ": at /extra: unknown key 'extra' (known: common, builds)"},
      {"{\"builds\": [\n [\"a.cpp\", 3]]}", m + ":2:"},
      {"{\"builds\": [\n [\"a.cpp\", 3]]}", "at /builds/0/1: expected a string"},
      {R"({"builds": [{"args": ["a"], "nam": "x"}]})", "at /builds/0/nam: unknown key 'nam'"},
      {R"({"builds": [{"name": "x"}]})", "at /builds/0: missing \"args\""},
      {R"({"builds": [{"name": 1, "args": []}]})", "at /builds/0/name: expected a string"},
      {R"({"builds": ["a.cpp"]})", "at /builds/0: expected an array of arguments or"},
      {R"({"common": "x", "builds": []})", "at /common: expected an array of strings"},
      {R"({"builds": [["build-many", "m.json"]]})",
       "at /builds/0/0: a build cannot run build-many"},
      {R"({"common": ["build-many"], "builds": [["m.json"]]})", "at /common/0: a build cannot"},
  };
  for (const auto& [text, message] : bad) {
    Error e = manifest_error(tmp, text);
    INFO(text);
    CHECK(e.kind() == ErrorKind::config);
    CHECK_THAT(std::string(e.what()), Catch::Contains(message));
  }
  CHECK_THROWS_WITH(load_build_list(tmp / "missing.json"),
                    "manifest " + tmp / "missing.json" + ": No such file or directory");
}

TEST_CASE("a manifest that is not a regular file is refused before it is read", "[unit][batch]") {
  TempDir tmp;
  fs::create_directories(tmp / "adir");
  // /dev/null reads as empty, a FIFO would block (tests/faults: E92).
  for (const std::string& path : {std::string("/dev/null"), tmp / "adir"}) {
    INFO(path);
    try {
      (void)load_build_list(path);
      FAIL("accepted " << path);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::config);
      CHECK(std::string(e.what()) == "manifest " + path + ": not a regular file");
    }
  }
}

TEST_CASE("two builds naming one output are refused, however the output is spelled",
          "[unit][batch]") {
  TempDir tmp;
  for (const char* second : {R"(["b.cpp", "-o", "./a.so"])", R"(["b.cpp", "--output", "a.so"])",
                             R"(["b.cpp", "--output=a.so"])", R"(["b.cpp", "-oa.so"])"}) {
    Error e = manifest_error(
        tmp, R"({"builds": [["a.cpp", "-o", "a.so"], )" + std::string(second) + "]}");
    INFO(second);
    CHECK(e.kind() == ErrorKind::usage);
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("at /builds/1: output") &&
                   Catch::Contains("is also the output of /builds/0; give each build its own -o"));
  }
  CHECK(load(tmp, R"({"builds": [["--output=x.so", "a.cpp"]]})")[0].name == "x.so");
}

TEST_CASE("outputs are compared where they really are: a directory reached through a link is one",
          "[unit][batch]") {
  TempDir tmp;
  fs::create_directory_symlink(".", tmp / "here");
  fs::create_directories(tmp / "sub");
  const std::string here = tmp / "here/a.so", plain = tmp / "a.so";
  Error e = manifest_error(tmp, R"({"builds": [["a.cpp", "-o", ")" + plain +
                                    R"("], ["b.cpp", "-o", ")" + here + R"("]]})");
  CHECK(e.kind() == ErrorKind::usage);
  CHECK_THAT(std::string(e.what()),
             Catch::Contains("at /builds/1: output " + here + " is also the output of /builds/0"));
  // The same name in two real directories is two outputs.
  CHECK(load(tmp, R"({"builds": [["a.cpp", "-o", ")" + plain + R"("], ["b.cpp", "-o", ")" +
                      tmp / "sub/a.so" + R"("]]})")
            .size() == 2);
}

TEST_CASE("run_batch: every job's exit code and output, progress after each", "[unit][batch]") {
  TempDir tmp;
  std::vector<BatchJob> jobs{job("one", {"ok", "1"}), job("two", {"fail", "2"}),
                             job("three", {"kill"}), job("four", {"ok", "4"})};
  std::vector<BatchProgress> seen;
  std::vector<BatchResult> r = run_batch(jobs, fake_kbuild(tmp), 2, false,
                                         [&](const BatchProgress& p) { seen.push_back(p); });
  REQUIRE(r.size() == 4);
  CHECK(r[0].name == "one");
  CHECK(r[0].exit_code == 0);
  CHECK(r[0].output == "built 1\n");
  CHECK(r[1].exit_code == 3);
  CHECK(r[1].output == "bad 2\n");
  CHECK(r[2].exit_code == 128 + 9);
  CHECK(r[3].exit_code == 0);
  for (const BatchResult& each : r) CHECK(each.started);
  REQUIRE(seen.size() == 4);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].done == i + 1);
    CHECK(seen[i].total == 4);
  }
  CHECK(seen.back().failed == 2);
}

TEST_CASE("run_batch runs at most N at a time, and never more threads than jobs", "[unit][batch]") {
  TempDir tmp;
  std::vector<BatchJob> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(job("j", {"hold"}));
  const Strings kbuild = fake_kbuild(tmp);
  HeldJobs held_jobs(tmp);
  std::vector<BatchResult> r;
  std::thread batch([&] { r = run_batch(jobs, kbuild, 2, false, nullptr); });
  // Each job holds until released, and one is released only once two hold
  // (or all have started): every job after the first starts beside another,
  // so a third run at once would be seen, not missed between short jobs.
  std::deque<int> holding;
  for (std::size_t started = 0, released = 0; released < jobs.size(); ++released) {
    while (holding.size() < 2 && started < jobs.size()) {
      holding.push_back(held_jobs.next_started());
      ++started;
    }
    held_jobs.release(holding.front());
    holding.pop_front();
  }
  batch.join();
  for (const BatchResult& each : r) CHECK(each.exit_code == 0);
  std::string counts = read_file(tmp / "kbuild.sh.seen");
  CHECK(counts.find('3') == std::string::npos);
  CHECK(std::count(counts.begin(), counts.end(), '\n') == 6);
  CHECK(std::count(counts.begin(), counts.end(), '2') >= 5);
  // -j 0 still runs them, one at a time.
  CHECK(run_batch({job("j", {"ok"})}, fake_kbuild(tmp), 0, false, nullptr)[0].exit_code == 0);
  CHECK(run_batch({}, fake_kbuild(tmp), 4, false, nullptr).empty());
}

TEST_CASE("--fail-fast: nothing new starts after a failure", "[unit][batch]") {
  TempDir tmp;
  std::vector<BatchResult> r =
      run_batch({job("a", {"fail", "a"}), job("b", {"ok"}), job("c", {"ok"})}, fake_kbuild(tmp), 1,
                true, nullptr);
  CHECK(r[0].exit_code == 3);
  CHECK_FALSE(r[1].started);
  CHECK_FALSE(r[2].started);
  CHECK(r[2].name == "c");  // a skipped job keeps its name for the summary
}

TEST_CASE("a kbuild that cannot be started is an internal failure of each job", "[unit][batch]") {
  TempDir tmp;
  std::vector<BatchResult> r =
      run_batch({job("a", {"x"})}, {tmp / "no-such-kbuild"}, 1, false, nullptr);
  CHECK(r[0].exit_code == exit_code(ErrorKind::internal));
  CHECK_THAT(r[0].output, Catch::Contains("cannot start"));
}

TEST_CASE("an output or a --report naming the manifest itself is refused", "[unit][batch]") {
  TempDir tmp;
  fs::create_directory_symlink(".", tmp / "here");
  const std::string m = tmp / "m.json";
  for (const std::string& args :
       {R"("a.cpp", "-o", ")" + m + R"(")", R"("a.cpp", "--output=)" + tmp / "here/m.json" + R"(")",
        R"("a.cpp", "-o", "a.so", "--report", ")" + m + R"(")",
        R"("a.cpp", "-o", "a.so", "--report=)" + tmp / "here/m.json" + R"(")"}) {
    INFO(args);
    Error e = manifest_error(tmp, R"({"builds": [[)" + args + "]]}");
    CHECK(e.kind() == ErrorKind::usage);
    CHECK_THAT(std::string(e.what()),
               Catch::StartsWith(m + ":1:") && Catch::Contains("at /builds/0: ") &&
                   Catch::Contains("is the manifest " + m + " itself; choose another"));
  }
  // The manifest reached through a link: its real file is protected too.
  write_file(tmp / "real.json", R"({"builds": [["a.cpp", "-o", ")" + tmp / "real.json" + R"("]]})");
  fs::create_symlink(tmp / "real.json", tmp / "link.json");
  CHECK_THROWS_WITH(load_build_list(tmp / "link.json"),
                    Catch::Contains("is the manifest " + tmp / "link.json" + " itself"));
}

TEST_CASE("a --report in common is refused: every build would write that one report",
          "[unit][batch]") {
  TempDir tmp;
  for (const char* common : {R"(["--no-torch", "--report", "r.json"])", R"(["--report=r.json"])"}) {
    INFO(common);
    Error e = manifest_error(
        tmp, std::string(R"({"common": )") + common + R"(, "builds": [["a.cpp"], ["b.cpp"]]})");
    CHECK(e.kind() == ErrorKind::usage);
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("at /common/") &&
                   Catch::Contains("--report in common: every build would write this one report") &&
                   Catch::Contains("give each build its own --report in its arguments"));
  }
  // Each build its own report: fine; two builds one report: refused as two outputs are.
  CHECK(
      load(tmp, R"({"builds": [["a.cpp", "--report", "a.json"], ["b.cpp", "--report", "b.json"]]})")
          .size() == 2);
  Error shared = manifest_error(
      tmp, R"({"builds": [["a.cpp", "--report", "r.json"], ["b.cpp", "--report=./r.json"]]})");
  CHECK(shared.kind() == ErrorKind::usage);
  CHECK_THAT(std::string(shared.what()),
             Catch::Contains("at /builds/1: --report ./r.json is also the --report of /builds/0; "
                             "give each build its own --report"));
}

TEST_CASE("a baseline of 100000 builds is read in linear time (names checked with a set)",
          "[unit][batch]") {
  TempDir tmp;
  std::string text = "{\"format\": 1, \"builds\": [";
  constexpr int kRows = 100000;
  for (int i = 0; i < kRows; ++i)
    text += std::string(i ? "," : "") + "{\"name\": \"kernel-" + std::to_string(i) +
            "\", \"status\": \"ok\"}";
  text += "]}";
  write_file(tmp / "before.json", text);
  auto seconds_of = [](auto&& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Reading it is about parsing it (the JSON with its locations): the
  // quadratic name check added about 30 s to a parse of a second or two.
  const double parse = seconds_of([&] { (void)parse_json_file_text(text, tmp / "before.json"); });
  std::vector<BatchSummaryRow> rows;
  const double load = seconds_of([&] { rows = load_batch_baseline(tmp / "before.json"); });
  CHECK(rows.size() == kRows);
  CHECK(rows.back().name == "kernel-99999");
  INFO("parse " << parse << " s, load " << load << " s");
  CHECK(load < 3 * parse + 2);
  // A name given twice is still refused.
  write_file(tmp / "twice.json",
             "{\"format\": 1, \"builds\": [{\"name\": \"a\", "
             "\"status\": \"ok\"}, {\"name\": \"a\", \"status\": \"ok\"}]}");
  CHECK_THROWS_WITH(load_batch_baseline(tmp / "twice.json"),
                    Catch::Contains("'a' names two builds"));
}
