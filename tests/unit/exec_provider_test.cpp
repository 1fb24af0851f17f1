// The exec provider: an external program asked for the 7 lists (here small
// shell scripts, which kbuild executes directly: the script's #! line is
// the script's own business).
#include "devices/device_file_load.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {

struct ExecFixture {
  TempDir dir;
  Paths paths;
  Environment env = Environment::from_process();

  std::shared_ptr<const Provider> provider(const std::string& script, double timeout_s = 5) {
    write_file(dir / "provider.sh", "#!/bin/sh\n" + script, true);
    std::string json =
        "{\"device\": \"fake\", \"exec\": {\"command\": [\"./provider.sh\", \"first arg\"], "
        "\"timeout_s\": " +
        std::to_string(timeout_s) + "}}";
    write_file(dir / "fake.json", json);
    return make_provider(load_device_file(dir / "fake.json"));
  }
  OptionsResult resolve(const std::shared_ptr<const Provider>& p, bool aot = false) {
    return p->options(DeviceQuery{"fake", aot, false}, ResolveContext{paths, env});
  }
  std::string error_of(const std::shared_ptr<const Provider>& p) {
    try {
      resolve(p);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::provider);
      return std::string(e.what()) + "\n" + e.detail();
    }
    FAIL("expected a provider error");
    return "";
  }
};

}  // namespace

TEST_CASE("an exec provider gets the device, aot_mode and compile_only and returns the 7 lists",
          "[unit][exec_provider]") {
  ExecFixture f;
  auto p = f.provider(
      "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args.txt\"\n"
      "echo '{\"definitions\": [\"USE_FAKE\"], \"libraries\": [\"fake\"], \"include_dirs\": [\"/f "
      "inc\"]}'\n");
  OptionsResult r = f.resolve(p, true);
  CHECK(r.options.values(OptionList::definitions) == Strings{"USE_FAKE"});
  CHECK(r.options.values(OptionList::include_dirs) == Strings{"/f inc"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"fake"});
  CHECK(read_file(f.dir / "args.txt") ==
        "first arg\n--device-type=fake\n--aot-mode=true\n--compile-only=false\n");
  CHECK(r.options.entries(OptionList::libraries)[0].origin.file == f.dir / "fake.json");
}

TEST_CASE("an exec provider that exits non-zero is a provider error showing its stderr",
          "[unit][exec_provider]") {
  ExecFixture f;
  std::string msg = f.error_of(f.provider("echo 'CANN toolkit missing' >&2\nexit 3\n"));
  CHECK(msg.find("device 'fake' exec provider") == 0);
  CHECK(msg.find("exit code 3") != std::string::npos);
  CHECK(msg.find("CANN toolkit missing") != std::string::npos);
}

TEST_CASE("an exec provider printing garbage or wrong JSON is a provider error",
          "[unit][exec_provider]") {
  ExecFixture f;
  CHECK(f.error_of(f.provider("echo 'hello there'\n")).find("not JSON") != std::string::npos);
  CHECK(f.error_of(f.provider("echo '[1, 2]'\n")).find("not an object") != std::string::npos);
  CHECK(f.error_of(f.provider("echo '{\"libs\": []}'\n")).find("unknown key 'libs'") !=
        std::string::npos);
  CHECK(f.error_of(f.provider("echo '{\"libraries\": [1]}'\n")).find("non-string") !=
        std::string::npos);
}

TEST_CASE("an exec provider that hangs is stopped at its time-out", "[unit][exec_provider]") {
  ExecFixture f;
  auto start = std::chrono::steady_clock::now();
  // It blocks on a FIFO nobody writes: only the time-out ends it.
  const std::string never = never_fifo(f.dir / "never");
  std::string msg = f.error_of(f.provider("echo started >&2\nexec cat '" + never + "'\n", 1));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(msg.find("timed out after 1s") != std::string::npos);
  CHECK(msg.find("started") != std::string::npos);
  CHECK(took < 10);
}

TEST_CASE("an exec provider whose program is missing is a provider error",
          "[unit][exec_provider]") {
  ExecFixture f;
  write_file(f.dir / "fake.json",
             "{\"device\": \"fake\", \"exec\": {\"command\": [\"./nope.sh\"]}}");
  auto p = make_provider(load_device_file(f.dir / "fake.json"));
  CHECK(f.error_of(p).find("not found or not executable") != std::string::npos);
}

TEST_CASE("an exec provider is told the chosen backend", "[unit][exec_provider]") {
  ExecFixture f;
  auto p = f.provider("printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args.txt\"\necho '{}'\n");
  p->options(DeviceQuery{"fake", false, true, "ascendc"}, ResolveContext{f.paths, f.env});
  CHECK(
      read_file(f.dir / "args.txt") ==
      "first arg\n--device-type=fake\n--aot-mode=false\n--compile-only=true\n--backend=ascendc\n");
}

TEST_CASE("a number too large for a double is a provider error, not a crash (found by fuzzing)",
          "[unit][exec_provider]") {
  try {
    parse_provider_output("{\"cflags\": [1e999999]}", "prov", Origin{});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::provider);
    CHECK(std::string(e.what()).find("prov: output is not JSON") == 0);
  }
}

TEST_CASE("parse_provider_output: some of the 7 keys, each an array of strings",
          "[unit][exec_provider]") {
  Origin origin{Layer::device, "exec acc", "/cfg/acc.json", 1};
  BuildOptions o = parse_provider_output(
      R"({"cflags": ["O2", "g"], "libraries": [], "include_dirs": ["/a b"]})", "prov", origin);
  CHECK(o.values(OptionList::cflags) == Strings{"O2", "g"});
  CHECK(o.values(OptionList::include_dirs) == Strings{"/a b"});
  CHECK(o.values(OptionList::libraries).empty());
  CHECK(o.entries(OptionList::cflags)[0].origin.provider == "exec acc");
  CHECK(parse_provider_output("{}", "prov", origin).values(OptionList::cflags).empty());
  CHECK_THROWS_WITH(parse_provider_output(R"({"cflags": "O2"})", "prov", origin),
                    "prov: output key 'cflags' is not an array");
  CHECK_THROWS_AS(parse_provider_output("", "prov", origin), Error);
}
