// "pkg_config" in a device file: the packages it names, read when loaded;
// pkg-config's words sorted into the 7 lists so Inductor's split gives
// them back; the questions asked of pkg-config (through a fake runner) and
// the provider errors that name the package and what to set.
#include "devices/pkg_config.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "../support/fake_process_runner.hpp"
#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "kbuild/error.hpp"
#include "plan/assemble.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {

// Answers pkg-config's questions by the argument that asks them
// (--variable=pcfiledir, --cflags, --libs, --modversion); records each argv
// and the environment it was given.
class PkgConfigFakeRunner : public ProcessRunner {
 public:
  std::map<std::string, ProcessResult> answers;
  std::vector<Strings> asked;
  const Environment* environment = nullptr;
  ProcessResult run(const Strings& argv, const ProcessRequest& options) override {
    asked.push_back(argv);
    environment = options.environment;
    for (const std::string& word : argv)
      if (auto it = answers.find(word); it != answers.end()) return it->second;
    return exited(1, "", "unexpected question");
  }
};

// What every entry of `list` renders to on the compiler's command line.
Strings pkg_config_rendered(const BuildOptions& options, OptionList list) {
  Strings words;
  for (const Entry& e : options.entries(list))
    for (std::string& w : render_entry(list, e)) words.push_back(std::move(w));
  return words;
}

std::string pkg_config_error(const PkgConfigPackage& package, const Environment& env,
                             PkgConfigFakeRunner& runner, ErrorKind kind,
                             std::string* detail = nullptr) {
  BuildOptions out;
  try {
    add_pkg_config_package(package, {"acc", "/cfg/acc.json", "config acc", false}, env, runner,
                           out);
  } catch (const Error& e) {
    CHECK(e.kind() == kind);
    if (detail) *detail = e.detail();
    return e.what();
  }
  FAIL("expected an error");
  return "";
}

PkgConfigPackage zeta_package(const std::string& text = "zeta >= 3") {
  std::optional<PkgConfigPackage> package = parse_pkg_config_package(text);
  REQUIRE(package);
  package->line = 3;
  return *package;
}

}  // namespace

TEST_CASE("a pkg_config entry is one package, optionally with a version condition",
          "[unit][pkg_config]") {
  CHECK(parse_pkg_config_package("zeta")->spec() == "zeta");
  CHECK(parse_pkg_config_package("zeta >= 3")->spec() == "zeta >= 3");
  CHECK(parse_pkg_config_package("zeta>=3.1")->spec() == "zeta >= 3.1");  // as pkg-config takes it
  CHECK(parse_pkg_config_package("zeta == 2")->condition == "= 2");
  CHECK(parse_pkg_config_package("gtk+-3.0")->name == "gtk+-3.0");
  for (const char* refused : {"", "--static", "-lzeta", "zeta eta", "zeta >=", "zeta >= 3 4",
                              "zeta ~ 3", "$(rm -rf ~)", "zeta >= '3'"}) {
    INFO(refused);
    CHECK_FALSE(parse_pkg_config_package(refused));
  }
}

TEST_CASE("pkg-config's words go to the lists Inductor renders back to the same words",
          "[unit][pkg_config]") {
  Origin origin{Layer::device, "config acc pkg-config zeta", "/pc/zeta.pc", 4};
  auto cflags = pkg_config_flags(
      "-I/opt/zeta/include -I /opt/two -DZETA=1 -D'MSG=a b' -pthread -isystem /opt/sys "
      "-fvisibility=hidden\n",
      false, origin);
  REQUIRE(cflags);
  CHECK(cflags->values(OptionList::include_dirs) == Strings{"/opt/zeta/include", "/opt/two"});
  CHECK(pkg_config_rendered(*cflags, OptionList::definitions) ==
        Strings{"-D", "ZETA=1", "-D", "MSG=a b"});
  CHECK(pkg_config_rendered(*cflags, OptionList::cflags) ==
        Strings{"-pthread", "-isystem", "/opt/sys", "-fvisibility=hidden"});
  CHECK(cflags->entries(OptionList::cflags)[0].origin.file_line() == "/pc/zeta.pc:4");

  auto libs =
      pkg_config_flags("-L/opt/zeta/lib -lzeta -Wl,-rpath,/opt/zeta/lib -pthread", true, origin);
  REQUIRE(libs);
  CHECK(libs->values(OptionList::libraries_dirs) == Strings{"/opt/zeta/lib"});
  CHECK(libs->values(OptionList::libraries) == Strings{"zeta"});
  CHECK(pkg_config_rendered(*libs, OptionList::ldflags) ==
        Strings{"-Wl,-rpath,/opt/zeta/lib", "-pthread"});
  CHECK(libs->values(OptionList::cflags).empty());
  CHECK_FALSE(pkg_config_flags("-I'/unclosed", false, origin));
}

TEST_CASE("a package's flags come from pkg-config, each naming the .pc file and its line",
          "[unit][pkg_config]") {
  TempDir dir;
  write_file(dir / "zeta.pc",
             "Name: Zeta\nDescription: z\nVersion: 3.2\nCflags: -I/z/include\nLibs: -lzeta\n");
  PkgConfigFakeRunner runner;
  runner.answers["--variable=pcfiledir"] = exited(0, dir.str() + "\n");
  runner.answers["--cflags"] = exited(0, "-I/z/include -DZETA\n");
  runner.answers["--libs"] = exited(0, "-L/z/lib -lzeta\n");
  Environment env(
      {{"PATH", "/usr/bin:/bin"}, {"PKG_CONFIG", "/bin/true"}, {"PKG_CONFIG_PATH", dir.str()}});
  BuildOptions out;
  add_pkg_config_package(zeta_package(), {"acc", "/cfg/acc.json", "config acc", true}, env, runner,
                         out);
  CHECK(out.values(OptionList::include_dirs) == Strings{"/z/include"});
  CHECK(out.values(OptionList::definitions) == Strings{"ZETA"});
  CHECK(out.values(OptionList::libraries) == Strings{"zeta"});
  CHECK(out.values(OptionList::libraries_dirs) == Strings{"/z/lib"});
  const Origin& cflag = out.entries(OptionList::include_dirs)[0].origin;
  CHECK(cflag.file == dir / "zeta.pc");
  CHECK(cflag.line == 4);  // Cflags:
  CHECK(cflag.provider == "config acc pkg-config zeta");
  CHECK(out.entries(OptionList::libraries)[0].origin.line == 5);  // Libs:
  // PKG_CONFIG names the program; the condition reaches it as one argument.
  REQUIRE(runner.asked.size() == 3);
  CHECK(runner.asked[0] == Strings{"/bin/true", "--print-errors", "--variable=pcfiledir", "zeta"});
  CHECK(runner.asked[1] == Strings{"/bin/true", "--print-errors", "--cflags", "zeta >= 3"});
  CHECK(runner.asked[2] == Strings{"/bin/true", "--print-errors", "--libs", "zeta >= 3"});
  CHECK(runner.environment == &env);
  // pkg-config's variables are the provider's inputs: a report records them.
  CHECK(env.consulted().at("PKG_CONFIG_PATH") == dir.str());
  CHECK(env.consulted().count("PKG_CONFIG_LIBDIR") == 1);
  CHECK(env.consulted().count("PKG_CONFIG_SYSROOT_DIR") == 1);
}

TEST_CASE("pkg-config's failures are provider errors naming the package and what to set",
          "[unit][pkg_config]") {
  Environment env(
      std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}, {"PKG_CONFIG", "/bin/true"}});
  SECTION("the package is not found") {
    PkgConfigFakeRunner runner;
    std::string msg = pkg_config_error(zeta_package(), env, runner, ErrorKind::provider);
    CHECK(msg.find("device 'acc' (/cfg/acc.json:3)") != std::string::npos);
    CHECK(msg.find("pkg-config package 'zeta' not found (PKG_CONFIG_PATH is not set)") !=
          std::string::npos);
    CHECK(msg.find("set PKG_CONFIG_PATH to the directory holding zeta.pc") != std::string::npos);
  }
  SECTION("its version does not match") {
    PkgConfigFakeRunner runner;
    runner.answers["--variable=pcfiledir"] = exited(0, "/pc\n");
    runner.answers["--cflags"] =
        exited(1, "", "Package 'zeta' has version '2.1', required version is '>= 3'\n");
    runner.answers["--modversion"] = exited(0, "2.1\n");
    std::string detail;
    std::string msg = pkg_config_error(zeta_package(), env, runner, ErrorKind::provider, &detail);
    CHECK(msg.find("pkg-config package 'zeta' is version 2.1 (/pc/zeta.pc), and the device file "
                   "asks for 'zeta >= 3'") != std::string::npos);
    CHECK(msg.find("PKG_CONFIG_PATH") != std::string::npos);
    CHECK(detail.find("required version is '>= 3'") != std::string::npos);
  }
  SECTION("another failure shows pkg-config's own message") {
    PkgConfigFakeRunner runner;
    runner.answers["--variable=pcfiledir"] = exited(0, "/pc\n");
    runner.answers["--cflags"] = exited(1, "", "Package 'eta', required by 'zeta', not found\n");
    std::string detail;
    std::string msg =
        pkg_config_error(zeta_package("zeta"), env, runner, ErrorKind::provider, &detail);
    CHECK(msg.find("pkg-config --cflags 'zeta' failed with exit code 1 (/pc/zeta.pc)") !=
          std::string::npos);
    CHECK(detail.find("required by 'zeta'") != std::string::npos);
  }
  SECTION("a package it requires is not found") {
    PkgConfigFakeRunner runner;
    runner.answers["--variable=pcfiledir"] =
        exited(1, "", "Package 'eta', required by 'zeta', not found\n");
    std::string detail;
    std::string msg = pkg_config_error(zeta_package(), env, runner, ErrorKind::provider, &detail);
    CHECK(msg.find("pkg-config package 'zeta' requires a package pkg-config does not find") !=
          std::string::npos);
    CHECK(msg.find("set PKG_CONFIG_PATH") != std::string::npos);
    CHECK(detail.find("'eta', required by 'zeta'") != std::string::npos);
  }
  SECTION("pkg-config itself is missing") {
    PkgConfigFakeRunner runner;
    Environment bare(std::map<std::string, std::string>{{"PATH", "/nonexistent"}});
    std::string msg = pkg_config_error(zeta_package(), bare, runner, ErrorKind::provider);
    CHECK(msg.find("pkg_config needs pkg-config, which is not on PATH") != std::string::npos);
    CHECK(msg.find("set PKG_CONFIG") != std::string::npos);
    CHECK(runner.asked.empty());
    Environment named(std::map<std::string, std::string>{{"PATH", "/usr/bin"},
                                                         {"PKG_CONFIG", "/nonexistent/pkgconf"}});
    CHECK(pkg_config_error(zeta_package(), named, runner, ErrorKind::provider)
              .find("PKG_CONFIG names '/nonexistent/pkgconf'") != std::string::npos);
  }
  SECTION("pkg-config runs past its time") {
    PkgConfigFakeRunner runner;
    ProcessResult slow;
    slow.timed_out = true;
    runner.answers["--variable=pcfiledir"] = slow;
    CHECK(pkg_config_error(zeta_package(), env, runner, ErrorKind::provider).find("timed out") !=
          std::string::npos);
  }
}

TEST_CASE("a device file's pkg_config is read when loaded, with file:line:key errors",
          "[unit][pkg_config]") {
  DeviceFile file = parse_device_file(
      "{\"device\": \"acc\",\n \"pkg_config\": [\"zeta >= 3\",\n  \"eta\"]}", "/cfg/acc.json");
  REQUIRE(file.pkg_config.size() == 2);
  CHECK(file.pkg_config[0].spec() == "zeta >= 3");
  CHECK(file.pkg_config[1].line == 3);
  CHECK(file.pkg_config[1].pointer == "/pkg_config/1");
  // Remembered between runs with the rest of the file.
  auto decoded = decode_device_file(encode_device_file(file));
  REQUIRE(decoded);
  REQUIRE(decoded->pkg_config.size() == 2);
  CHECK(decoded->pkg_config[0].condition == ">= 3");
  CHECK(decoded->pkg_config[1].line == 3);

  auto config_error = [](const std::string& text) -> std::string {
    try {
      parse_device_file(text, "/cfg/acc.json");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::config);
      return e.what();
    }
    FAIL("expected a config error for " << text);
    return "";
  };
  CHECK(
      config_error("{\"device\": \"acc\",\n \"pkg_config\": \"zeta\"}").find("/cfg/acc.json:2:") !=
      std::string::npos);
  CHECK(config_error("{\"device\": \"acc\", \"pkg_config\": \"zeta\"}")
            .find("at /pkg_config: expected an array of pkg-config packages") != std::string::npos);
  CHECK(config_error("{\"device\": \"acc\", \"pkg_config\": [\"zeta\", \"--static\"]}")
            .find("at /pkg_config/1: '--static' is not a pkg-config package") != std::string::npos);
  CHECK(config_error("{\"device\": \"acc\", \"pkg_config\": [3]}")
            .find("at /pkg_config/0: expected a string") != std::string::npos);
  CHECK(config_error("{\"device\": \"acc\", \"pkg_config\": [\"zeta\"], "
                     "\"exec\": {\"command\": [\"p\"]}}")
            .find("at /pkg_config: an exec provider prints every option itself") !=
        std::string::npos);
  CHECK(
      config_error("{\"device\": \"acc\", \"pkg_confg\": []}").find("did you mean 'pkg_config'?") !=
      std::string::npos);
}

TEST_CASE("the list provider adds pkg-config's options after the device-level lists",
          "[unit][pkg_config]") {
  TempDir dir;
  write_file(dir / "zeta.pc", "Cflags: -I/z\n");
  PkgConfigFakeRunner runner;
  runner.answers["--variable=pcfiledir"] = exited(0, dir.str());
  runner.answers["--cflags"] = exited(0, "-I/z");
  runner.answers["--libs"] = exited(0, "-lzeta");
  Registry registry;
  registry.register_device(
      "acc", make_provider(parse_device_file("{\"device\": \"acc\", \"include_dirs\": [\"/a\"], "
                                             "\"pkg_config\": [\"zeta\"]}",
                                             "/cfg/acc.json")));
  Paths paths;
  Environment env(std::map<std::string, std::string>{{"PKG_CONFIG", "/bin/true"}});
  ResolveContext ctx{paths, env};
  ctx.processes = &runner;
  OptionsResult r = registry.resolve(DeviceQuery{"acc", false, false, ""}, ctx, false);
  CHECK(r.options.values(OptionList::include_dirs) == Strings{"/a", "/z"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"zeta"});
  CHECK(runner.asked.size() == 3);
}
