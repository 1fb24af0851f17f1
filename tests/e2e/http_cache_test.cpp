// The remote cache over HTTP against a real nginx on loopback (Debian's
// nginx-core: its WebDAV module takes PUT), started per test with its own
// prefix, config, pid and logs in a temporary directory and stopped at its
// end; misbehaving servers (500, a drip, a length too large) are
// tests/support/http_fault_server.py. Two "machines" (two local caches, two
// copies of the compiler) share a compile, by kbuild, kbuild cc and a
// masquerade link; a dead server is a miss with one warning; a wrong
// signature is refused; secrets are never shown.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/test_support.hpp"
#include "util/digest.hpp"

using namespace kbuild_test;

namespace {

int http_cache_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// curl's answer (the body) to GET `url`, or "" when it fails.
std::string http_cache_fetch(const std::string& url) {
  RunResult r = run({"/usr/bin/curl", "-sf", "--max-time", "5", url});
  return r.exit_code == 0 ? r.out : "";
}

// nginx on 127.0.0.1 serving and taking (WebDAV PUT) the files of root/,
// in the foreground (daemon off, one process), ended with the test (and by
// `timeout` after 10 minutes should the test be killed).
struct Nginx {
  TempDir dir;
  int port = 0;
  std::string base;  // http://127.0.0.1:PORT
  std::unique_ptr<BackgroundProcess> server;

  Nginx() {
    fs::create_directories(dir / "root");
    fs::create_directories(dir / "logs");
    fs::create_directories(dir / "tmp");
    // The port may be taken by another test's server between its choice
    // and nginx's bind: then nginx ends, and another port is tried. The
    // marker file proves that the server answering is this one.
    const std::string marker = "nginx " + dir.str();
    write_file(dir / "root/marker", marker);
    for (int attempt = 0; attempt < 5; ++attempt) {
      port = http_cache_free_port();
      base = "http://127.0.0.1:" + std::to_string(port);
      write_file(dir / "nginx.conf", config());
      server = std::make_unique<BackgroundProcess>(std::vector<std::string>{
          "/usr/bin/timeout", "600", "/usr/sbin/nginx", "-p", dir.str() + "/", "-c",
          dir / "nginx.conf", "-e", dir / "logs/error.log"});
      for (int i = 0; i < 200 && server->running(); ++i) {
        if (http_cache_fetch(base + "/marker") == marker) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
      }
      server.reset();
    }
    FAIL("nginx did not start: " << read_file(dir / "logs/error.log"));
  }
  std::string config() const {
    const std::string d = dir.str();
    return "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + d +
           "/nginx.pid;\nerror_log " + d +
           "/logs/error.log;\nevents { worker_connections 64; }\nhttp {\n  access_log " + d +
           "/logs/access.log;\n  client_body_temp_path " + d +
           "/tmp;\n  client_max_body_size 0;\n  server {\n    listen 127.0.0.1:" +
           std::to_string(port) + ";\n    root " + d +
           "/root;\n    location / {\n      dav_methods PUT;\n      create_full_put_path on;\n"
           "    }\n  }\n}\n";
  }
  // The entries stored under PATH (root/PATH).
  std::vector<fs::path> entries(const std::string& path = "cache") const {
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / ("root/" + path), ec))
      if (e.path().filename().string().rfind("kbuild-entry-4-", 0) == 0) found.push_back(e.path());
    return found;
  }
  // How many requests of `verb` nginx logged.
  int requests(const std::string& verb) const {
    std::string log = read_file(dir / "logs/access.log");
    int n = 0;
    for (std::size_t at = 0; (at = log.find("\"" + verb + " ", at)) != std::string::npos; ++at) ++n;
    return n;
  }
};

// tests/support/http_fault_server.py in `mode` on a free port.
struct FaultServer {
  int port = 0;
  std::string url;
  std::unique_ptr<BackgroundProcess> server;
  explicit FaultServer(const std::string& mode) {
    port = http_cache_free_port();
    url = "http://127.0.0.1:" + std::to_string(port) + "/cache";
    server = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/timeout", "600", "/usr/bin/python3",
                                 source_root() + "/tests/support/http_fault_server.py",
                                 std::to_string(port), mode},
        "listening");
  }
};

struct HttpFleet {
  TempDir shared;
  std::string count = shared / "compiler-runs";
  HttpFleet() {
    write_file(shared / "h.h", "#define VALUE 41\n");
    write_file(shared / "k0.cpp", "#include \"h.h\"\nextern \"C\" int f() { return VALUE; }\n");
  }
  int runs() const {
    std::error_code ec;
    if (!fs::exists(count, ec)) return 0;
    std::string text = read_file(count);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
};

struct HttpMachine {
  TempDir home, cwd;
  std::string cxx = cwd / "toolchain/bin/g++";
  std::map<std::string, std::string> env;

  HttpMachine(const HttpFleet& fleet, const std::string& url) {
    // Counts its compiles (not kbuild's questions: --version, the search
    // dirs), then is g++; the same bytes on every machine.
    write_file(
        cxx,
        "#!/bin/sh\ncase \"$*\" in --version|*-print-search-dirs*|*\"-E -v -x c++ /dev/null\"*) ;; "
        "*) echo \"$*\" >> \"$KBUILD_TEST_COUNT\";; esac\nexec /usr/bin/g++ \"$@\"\n",
        true);
    env = {{"KBUILD_TEST_COUNT", fleet.count}, {"KBUILD_REMOTE_CACHE", url}};
  }
  RunResult build(const HttpFleet& fleet, std::vector<std::string> args = {},
                  std::map<std::string, std::string> extra = {}) {
    std::vector<std::string> argv{"--no-torch", "--cxx",       cxx, fleet.shared / "k0.cpp",
                                  "-o",         cwd / "k0.so", "-v"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> vars = env;
    for (auto& [k, v] : extra) vars[k] = v;
    return run_kbuild(argv, home.str(), vars);
  }
};

bool http_remote_hit(const RunResult& r) {
  return r.err.find("cache: hit (remote)") != std::string::npos;
}
int http_warnings(const RunResult& r) {
  int n = 0;
  for (std::size_t at = 0; (at = r.err.find("kbuild: warning:", at)) != std::string::npos; ++at)
    ++n;
  return n;
}

}  // namespace

TEST_CASE("two machines share a compile through nginx; -v and the report say there are no leases",
          "[e2e][remote][http]") {
  Nginx nginx;
  HttpFleet fleet;
  const std::string url = "http://kb:s3cret%40x@127.0.0.1:" + std::to_string(nginx.port) + "/cache";
  HttpMachine a(fleet, url), b(fleet, url);
  RunResult first = a.build(fleet);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_FALSE(http_remote_hit(first));
  CHECK(first.err.find("no leases over HTTP") != std::string::npos);
  REQUIRE(nginx.entries().size() == 1);
  // Asked first whether another machine uploaded it (HEAD), then PUT.
  CHECK(nginx.requests("HEAD") == 1);
  CHECK(nginx.requests("PUT") == 1);
  const std::string report = b.cwd / "report.json";
  RunResult second = b.build(fleet, {"--report", report});
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(http_remote_hit(second));
  CHECK(http_warnings(second) == 0);
  INFO(read_file(fleet.count));
  CHECK(fleet.runs() == 1);
  CHECK(read_file(b.cwd / "k0.so") == read_file(a.cwd / "k0.so"));
  CHECK(nginx.requests("PUT") == 1);  // a hit uploads nothing
  const auto written = nlohmann::json::parse(read_file(report));
  CHECK(written["remote_cache"]["leases"] == false);
  CHECK(written["remote_cache"]["address"] ==
        "http://***@127.0.0.1:" + std::to_string(nginx.port) + "/cache");
  // The userinfo is never shown: not in -v, warnings or the report.
  for (const std::string& text : {first.err, second.err, read_file(report)}) {
    CHECK(text.find("s3cret") == std::string::npos);
    CHECK(text.find("kb:") == std::string::npos);
  }
  // A third machine that misses the entry with the entry there: it is on
  // the server already, so nothing is uploaded again.
  HttpMachine c(fleet, url);
  RunResult third = c.build(fleet, {}, {{"KBUILD_REMOTE_CACHE_READONLY", "1"}});
  CHECK(http_remote_hit(third));
  CHECK(nginx.requests("PUT") == 1);
}

TEST_CASE("kbuild cc and a masquerade link share through nginx", "[e2e][remote][http][cc]") {
  Nginx nginx;
  HttpFleet fleet;
  const std::string url = nginx.base + "/cc";
  HttpMachine a(fleet, url), b(fleet, url);
  std::map<std::string, std::string> vars = a.env;
  vars["KBUILD_VERBOSE"] = "1";
  RunResult first = run_kbuild({"cc", "--", a.cxx, "-shared", "-fPIC", "-O2",
                                fleet.shared / "k0.cpp", "-o", a.cwd / "k0.so"},
                               a.home.str(), vars);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err.find("remote cache: " + url) != std::string::npos);
  CHECK(first.err.find("no leases over HTTP") != std::string::npos);
  CHECK(nginx.entries("cc").size() == 1);
  // b: kbuild started through a link named g++, the real one (the
  // counting copy) after it on PATH, as ccache is set up.
  fs::create_directories(b.cwd / "masq");
  fs::create_symlink(kbuild_binary(), b.cwd / "masq/g++");
  std::map<std::string, std::string> set = b.env;
  std::vector<std::string> unset;
  make_hermetic(b.home.str(), set, unset);
  set["KBUILD_VERBOSE"] = "1";
  set["PATH"] = (b.cwd / "masq") + ":" + fs::path(b.cxx).parent_path().string() + ":/usr/bin:/bin";
  RunResult second = run({b.cwd / "masq/g++", "-shared", "-fPIC", "-O2", fleet.shared / "k0.cpp",
                          "-o", b.cwd / "k0.so"},
                         set, unset);
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(http_remote_hit(second));
  CHECK(fleet.runs() == 1);
  CHECK(read_file(b.cwd / "k0.so") == read_file(a.cwd / "k0.so"));
}

TEST_CASE("a dead HTTP server is a miss and one warning, never a failed build",
          "[e2e][remote][http]") {
  HttpFleet fleet;
  HttpMachine m(fleet, "http://127.0.0.1:" + std::to_string(http_cache_free_port()) + "/cache");
  RunResult r = m.build(fleet);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(http_warnings(r) == 1);
  CHECK(r.err.find("cannot connect") != std::string::npos);
  CHECK(fs::exists(m.cwd / "k0.so"));
  CHECK(fleet.runs() == 1);
  CHECK(run_kbuild({"cache", "stats"}, m.home.str()).out.find("remote errors    1\n") !=
        std::string::npos);
}

TEST_CASE("a server that answers 500, drips, or announces too long an answer: one warning each",
          "[e2e][remote][http]") {
  HttpFleet fleet;
  struct Case {
    const char* mode;
    const char* words;
  };
  for (const Case& c : {Case{"500", "GET: the server answered HTTP 500"},
                        Case{"drip", "no answer within the timeout"},
                        Case{"huge", "longer than the 4000000 bytes accepted"},
                        Case{"chunky", "longer than the 4000000 bytes accepted"}}) {
    DYNAMIC_SECTION(c.mode) {
      FaultServer server(c.mode);
      HttpMachine m(fleet, server.url);
      const auto start = std::chrono::steady_clock::now();
      RunResult r = m.build(fleet, {},
                            {{"KBUILD_REMOTE_CACHE_TIMEOUT_MS", "500"},
                             {"KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES", "4000000"}});
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(http_warnings(r) == 1);
      CHECK(r.err.find(c.words) != std::string::npos);
      CHECK(fs::exists(m.cwd / "k0.so"));
      CHECK(seconds < 30);  // the drip ends at the deadline, not in 20 s
    }
  }
}

TEST_CASE("over HTTP a wrong signature is refused and a damaged entry replaced",
          "[e2e][remote][http]") {
  Nginx nginx;
  HttpFleet fleet;
  const std::string url = nginx.base + "/cache";
  kbuild::SigningKeys keys = kbuild::generate_signing_keys(),
                      other = kbuild::generate_signing_keys();
  HttpMachine stranger(fleet, url);
  stranger.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = other.secret_hex;
  REQUIRE(stranger.build(fleet).exit_code == 0);
  REQUIRE(nginx.entries().size() == 1);
  HttpMachine reader(fleet, url);
  reader.env["KBUILD_REMOTE_CACHE_VERIFY_KEY"] = keys.public_hex;
  RunResult refused = reader.build(fleet, {"--remote-cache-readonly"});
  INFO(refused.err);
  REQUIRE(refused.exit_code == 0);
  CHECK_FALSE(http_remote_hit(refused));
  CHECK(refused.err.find("has a bad signature; not used") != std::string::npos);
  CHECK(fleet.runs() == 2);
  // One bit of the entry flipped on the server: not used, and the writer's
  // upload replaces it (HTTP has no DELETE here; the PUT is not skipped).
  const fs::path entry = nginx.entries()[0];
  std::string bytes = read_file(entry);
  const std::string good = bytes;
  bytes[bytes.size() - 100] ^= 1;
  write_file(entry, bytes);
  HttpMachine writer(fleet, url);
  writer.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = keys.secret_hex;
  RunResult damaged = writer.build(fleet);
  INFO(damaged.err);
  REQUIRE(damaged.exit_code == 0);
  CHECK(damaged.err.find("is damaged (truncated or altered); not used, replaced by this build's "
                         "upload") != std::string::npos);
  CHECK(http_warnings(damaged) == 1);
  // Now signed by the key the reader verifies: a hit.
  HttpMachine reader2(fleet, url);
  reader2.env = reader.env;
  RunResult used = reader2.build(fleet, {"--remote-cache-readonly"});
  INFO(used.err);
  CHECK(http_remote_hit(used));
  CHECK(read_file(entry) != bytes);
}

TEST_CASE("an Authorization header is sent and never shown", "[e2e][remote][http]") {
  HttpFleet fleet;
  HttpMachine m(fleet, "http://127.0.0.1:" + std::to_string(http_cache_free_port()) + "/cache");
  m.env["KBUILD_REMOTE_CACHE_AUTHORIZATION"] = "Bearer t0ken-xyz";
  const std::string report = m.cwd / "report.json";
  RunResult r = m.build(fleet, {"--report", report});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const std::string written = read_file(report);
  CHECK(written.find("KBUILD_REMOTE_CACHE_AUTHORIZATION") != std::string::npos);
  for (const std::string& text : {r.err, r.out, written})
    CHECK(text.find("t0ken") == std::string::npos);
}

TEST_CASE("Ctrl-C ends the wait for a dripping HTTP server at once: exit 130, nothing built",
          "[e2e][remote][http]") {
  FaultServer server("drip");
  HttpFleet fleet;
  HttpMachine m(fleet, server.url);
  std::map<std::string, std::string> vars = m.env;
  vars["KBUILD_REMOTE_CACHE_TIMEOUT_MS"] = "60000";
  std::vector<std::string> unset;
  make_hermetic(m.home.str(), vars, unset);
  // SIGINT after 1 s (timeout keeps kbuild's exit status), mid-answer.
  const auto start = std::chrono::steady_clock::now();
  RunResult r =
      run({"/usr/bin/timeout", "--preserve-status", "-s", "INT", "1", kbuild_binary(), "--no-torch",
           "--cxx", m.cxx, fleet.shared / "k0.cpp", "-o", m.cwd / "k0.so", "-v"},
          vars, unset);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.err);
  CHECK(r.exit_code == 130);
  CHECK(seconds < 5);  // not the 60 s deadline
  CHECK(r.err.find("while the remote cache answered") != std::string::npos);
  CHECK(r.err.find("nothing was compiled") != std::string::npos);
  CHECK_FALSE(fs::exists(m.cwd / "k0.so"));
  CHECK(fleet.runs() == 0);
}
