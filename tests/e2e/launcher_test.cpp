// Launchers with the real programs: ccache and sccache cache the compile
// step; distcc sends it to a distccd and icecc asks an icecream scheduler
// (both started here on 127.0.0.1), and their logs say so.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

bool have(const char* program) {
  return run({"/bin/sh", "-c", std::string("command -v ") + program}).exit_code == 0;
}

struct LauncherCase {
  TempDir home, dir;
  std::string kernel;
  LauncherCase() : kernel(dir / "k.cpp") {
    write_file(kernel, "extern \"C\" int f() { return 5; }\n");
  }
};

// A distccd on 127.0.0.1 for the life of the object, logging to `log`.
struct Distccd {
  std::string log;
  int port = 0;
  std::unique_ptr<BackgroundProcess> daemon;
  explicit Distccd(const TempDir& dir) : log(dir / "distccd.log") {
    std::mt19937 rng{std::random_device{}()};
    for (int attempt = 0; attempt < 5 && port == 0; ++attempt) {
      int candidate = 30000 + static_cast<int>(rng() % 9000);
      write_file(log, "");
      fs::permissions(log, fs::perms::all, fs::perm_options::add);  // distccd drops to nobody
      daemon = std::make_unique<BackgroundProcess>(std::vector<std::string>{
          "/usr/bin/distccd", "--daemon", "--no-detach", "--allow", "127.0.0.1", "--listen",
          "127.0.0.1", "--port", std::to_string(candidate), "--log-file", log, "--verbose",
          "--user", "nobody", "--jobs", "2"});
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      if (daemon->running() && read_file(log).find("bind of") == std::string::npos)
        port = candidate;
    }
  }
};

int random_port() {
  std::mt19937 rng{std::random_device{}()};
  return 30000 + static_cast<int>(rng() % 9000);
}

// An icecream scheduler and daemon on 127.0.0.1 for the life of the object.
struct Icecream {
  std::string daemon_log;
  bool ready = false;
  std::unique_ptr<BackgroundProcess> scheduler, daemon;
  explicit Icecream(const TempDir& dir) : daemon_log(dir / "iceccd.log") {
    int port = random_port();
    fs::create_directories(dir / "icecc-envs");
    run({"/bin/chown", "icecc:icecc", dir / "icecc-envs"});  // iceccd builds as user icecc
    fs::permissions(dir.path(), fs::perms::all, fs::perm_options::add);
    scheduler = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/sbin/icecc-scheduler", "-p", std::to_string(port)});
    daemon = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        "/usr/sbin/iceccd", "-s", "127.0.0.1:" + std::to_string(port), "-b", dir / "icecc-envs",
        "-N", "kbuild-test", "-p", std::to_string(port + 5), "-l", daemon_log, "-vv"});
    for (int i = 0; i < 300 && !ready; ++i) {  // up to 30 s: iceccd retries every few seconds
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ready = fs::exists(daemon_log) &&
              read_file(daemon_log).find("Connected to scheduler") != std::string::npos;
    }
  }
};

// The sccache servers a test started, on every port it tried: stopped on
// scope exit, also when a REQUIRE ends the test half-way.
struct SccacheServers {
  std::map<std::string, std::string> env;
  std::vector<std::string> ports;
  ~SccacheServers() {
    for (const std::string& port : ports) {
      env["SCCACHE_SERVER_PORT"] = port;
      run({"/usr/bin/sccache", "--stop-server"}, env);
    }
  }
};

}  // namespace

TEST_CASE("--launcher ccache: the compile step hits ccache the second time", "[e2e][launcher]") {
  if (!have("ccache")) {
    WARN("ccache not installed: skipped");
    return;
  }
  LauncherCase c;
  std::map<std::string, std::string> env{{"CCACHE_DIR", c.dir / "ccache"}};
  for (const char* out : {"a.so", "b.so"}) {
    // kbuild's own cache on, one per build: both reach the launcher.
    env["KBUILD_CACHE_DIR"] = c.dir / (std::string("kbuild-cache-") + out);
    RunResult r =
        run_kbuild({"--no-torch", "--launcher", "ccache", "-v", c.kernel, "-o", c.dir / out},
                   c.home.str(), env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("ran: /usr/bin/ccache ") != std::string::npos);
  }
  RunResult stats = run({"/usr/bin/ccache", "--print-stats"}, env);
  CHECK(stats.out.find("direct_cache_hit\t1") != std::string::npos);
  CHECK(fs::exists(c.dir / "b.so"));
}

TEST_CASE("--launcher distcc --resolve-native: the compile runs on the distccd",
          "[e2e][launcher]") {
  if (!have("distccd") || !have("distcc")) {
    WARN("distcc not installed: skipped");
    return;
  }
  LauncherCase c;
  Distccd daemon(c.dir);
  REQUIRE(daemon.port != 0);
  fs::create_directories(c.dir / "distcc");
  std::map<std::string, std::string> env{
      {"DISTCC_HOSTS", "127.0.0.1:" + std::to_string(daemon.port)},
      {"DISTCC_FALLBACK", "0"},
      {"DISTCC_DIR", c.dir / "distcc"}};
  RunResult r = run_kbuild(
      {"--no-torch", "--launcher", "distcc", "--resolve-native", c.kernel, "-o", c.dir / "k.so"},
      c.home.str(), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string log = read_file(daemon.log);
  INFO(log);
  CHECK(log.find("COMPILE_OK") != std::string::npos);
  CHECK(log.find("k.cpp") != std::string::npos);
  // Without --resolve-native distcc keeps -march=native local, and kbuild says so.
  RunResult local = run_kbuild(
      {"--no-torch", "--no-cache", "--launcher", "distcc", c.kernel, "-o", c.dir / "l.so"},
      c.home.str(), env);
  CHECK(local.exit_code == 0);
  CHECK(local.err.find("add --resolve-native") != std::string::npos);
}

TEST_CASE("a custom launcher is put before the whole command; a missing one is an error",
          "[e2e][launcher]") {
  LauncherCase c;
  write_file(c.dir / "wrap", "#!/bin/sh\necho \"$@\" > \"$WRAP_LOG\"\nexec \"$@\"\n", true);
  RunResult r = run_kbuild(
      {"--no-torch", "--no-cache", "--launcher", c.dir / "wrap", c.kernel, "-o", c.dir / "k.so"},
      c.home.str(), {{"WRAP_LOG", c.dir / "wrap.log"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::string logged = read_file(c.dir / "wrap.log");
  CHECK(logged.find(" -shared ") != std::string::npos);  // one step: compile and link
  RunResult missing =
      run_kbuild({"--no-torch", "--launcher", "no-such-launcher", c.kernel}, c.home.str());
  CHECK(missing.exit_code == 10);
  CHECK(missing.err.find("launcher 'no-such-launcher' not found") != std::string::npos);
}

TEST_CASE("a device file can name the launcher its builds use; --launcher overrides it",
          "[e2e][launcher]") {
  LauncherCase c;
  write_file(c.dir / "wrap", "#!/bin/sh\necho \"$@\" > \"$WRAP_LOG\"\nexec \"$@\"\n", true);
  write_file(c.dir / "dev.json", "{\"device\": \"acc\", \"mode\": \"extend\", \"launcher\": \"" +
                                     c.dir / "wrap" + "\"}");
  std::map<std::string, std::string> env{{"WRAP_LOG", c.dir / "wrap.log"}};
  RunResult r = run_kbuild({"--no-torch", "--no-cache", "--config", c.dir / "dev.json", "--device",
                            "acc", c.kernel, "-o", c.dir / "k.so"},
                           c.home.str(), env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(c.dir / "wrap.log"));
  fs::remove(c.dir / "wrap.log");
  RunResult cpu = run_kbuild(
      {"--no-torch", "--no-cache", "--config", c.dir / "dev.json", c.kernel, "-o", c.dir / "k2.so"},
      c.home.str(), env);
  CHECK(cpu.exit_code == 0);
  CHECK_FALSE(fs::exists(c.dir / "wrap.log"));  // only that device's builds
  write_file(c.dir / "bad.json", "{\"device\": \"acc\", \"launcher\": [\"ccache\"]}");
  CHECK(run_kbuild({"devices", "--config", c.dir / "bad.json"}, c.home.str()).exit_code == 3);
}

TEST_CASE("--launcher sccache: the second compile is an sccache hit", "[e2e][launcher]") {
  if (!have("sccache")) {
    WARN("sccache not installed: skipped");
    return;
  }
  LauncherCase c;
  std::map<std::string, std::string> env{{"SCCACHE_DIR", c.dir / "sccache"},
                                         {"SCCACHE_IDLE_TIMEOUT", "60"}};
  SccacheServers servers{env, {}};
  // The server on a port of its own; a port someone else holds gets another.
  RunResult started;
  for (int attempt = 0; attempt < 3; ++attempt) {
    env["SCCACHE_SERVER_PORT"] = std::to_string(random_port());
    servers.ports.push_back(env["SCCACHE_SERVER_PORT"]);
    started = run({"/usr/bin/sccache", "--start-server"}, env);
    if (started.exit_code == 0) break;
  }
  INFO(started.err);
  REQUIRE(started.exit_code == 0);
  for (const char* out : {"a.so", "b.so"}) {
    auto start = std::chrono::steady_clock::now();
    // kbuild's own cache on, one per build: both reach the launcher.
    env["KBUILD_CACHE_DIR"] = c.dir / (std::string("kbuild-cache-") + out);
    RunResult r =
        run_kbuild({"--no-torch", "--launcher", "sccache", "-v", c.kernel, "-o", c.dir / out},
                   c.home.str(), env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("ran: /usr/bin/sccache ") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
  RunResult stats = run({"/usr/bin/sccache", "--show-stats"}, env);
  INFO(stats.out);
  CHECK(stats.out.find("Cache hits (C/C++)                    1") != std::string::npos);
  CHECK(fs::exists(c.dir / "b.so"));
}

TEST_CASE("--launcher icecc: the compile is scheduled by an icecream scheduler",
          "[e2e][launcher]") {
  if (!have("icecc") || !fs::exists("/usr/sbin/iceccd") || geteuid() != 0 ||
      run({"/usr/bin/id", "icecc"}).exit_code != 0) {
    WARN("icecc not installed, or not root (iceccd needs root): skipped");
    return;
  }
  if (run({"/usr/bin/pgrep", "-x", "iceccd"}).exit_code == 0) {
    WARN("an iceccd already runs here and owns the client socket: skipped");
    return;
  }
  LauncherCase c;
  Icecream icecream(c.dir);
  INFO(read_file(icecream.daemon_log));
  REQUIRE(icecream.ready);
  RunResult r = run_kbuild(
      {"--no-torch", "--launcher", "icecc", "--resolve-native", c.kernel, "-o", c.dir / "k.so"},
      c.home.str(), {{"ICECC_DEBUG", "debug"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The icecc client asked the daemon, which asked the scheduler, for a host.
  CHECK(r.err.find("asking for host to use") != std::string::npos);
  CHECK(fs::exists(c.dir / "k.so"));
}
