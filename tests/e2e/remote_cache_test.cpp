// The remote cache against a real redis-server on loopback (started per test
// on a free port, stopped at its end): two "machines" (two local caches, two
// copies of the compiler, two working directories) share a compile; a dead,
// killed or stopped server is a miss with one warning; damaged, unsigned or
// badly signed entries are never used; a read-only client never writes; and
// concurrent builders of one kernel compile it once.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../support/test_support.hpp"
#include "util/digest.hpp"
#include "util/redis_client.hpp"

using namespace kbuild_test;

namespace {

// "k<i>" (built up in steps: "k" + std::to_string(i) trips g++ 12's -Wrestrict).
std::string kernel_name(int i) {
  std::string name = "k";
  name += std::to_string(i);
  return name;
}

int free_port() {
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

// redis-server on 127.0.0.1 only, nothing saved to disk, ended with the
// test (and by `timeout` after 10 minutes should the test be killed).
struct Redis {
  TempDir dir;
  int port = free_port();
  std::string url = "redis://127.0.0.1:" + std::to_string(port);
  std::unique_ptr<BackgroundProcess> server;

  explicit Redis(const std::vector<std::string>& options = {}) {
    // free_port() races with every other test on the host: another test's
    // server may bind the port first, and it would answer on it. This
    // server is the one answering on its own unix socket; without that, it
    // starts again on another port.
    for (int attempt = 0; attempt < 5 && !start(options); ++attempt) {
      port = free_port();
      url = "redis://127.0.0.1:" + std::to_string(port);
    }
    REQUIRE(own_socket_answers());
    REQUIRE(client());
    for (int i = 0; i < 200 && !fs::exists(dir / "redis.pid"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  // The server's own unix socket, an address no other test can hold.
  std::string socket_url() const { return "unix://" + (dir / "redis.sock"); }
  bool own_socket_answers() const {
    auto address = kbuild::parse_redis_url(socket_url());
    return address && kbuild::RedisClient::connect(*address, {});
  }
  bool start(const std::vector<std::string>& options) {
    std::vector<std::string> argv{"/usr/bin/timeout",
                                  "600",
                                  "/usr/bin/redis-server",
                                  "--bind",
                                  "127.0.0.1",
                                  "--port",
                                  std::to_string(port),
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--dir",
                                  dir.str(),
                                  "--pidfile",
                                  dir / "redis.pid",
                                  "--protected-mode",
                                  "yes",
                                  "--unixsocket",
                                  dir / "redis.sock",
                                  "--unixsocketperm",
                                  "700"};
    argv.insert(argv.end(), options.begin(), options.end());
    server = std::make_unique<BackgroundProcess>(argv);
    for (int i = 0; i < 200 && server->running() && !own_socket_answers(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (own_socket_answers()) return true;
    server.reset();  // it could not bind the port: stopped, and another tried
    return false;
  }
  pid_t pid() const {
    std::error_code ec;
    if (!fs::exists(dir / "redis.pid", ec)) return -1;
    return static_cast<pid_t>(std::stol(read_file(dir / "redis.pid")));
  }
  std::optional<kbuild::RedisClient> client() const {
    auto address = kbuild::parse_redis_url(url);
    auto c = kbuild::RedisClient::connect(*address, {});
    if (!c) return std::nullopt;
    return std::move(*c);
  }
  // redis-cli's answer to `words` (one line).
  std::string cli(const std::vector<std::string>& words) const {
    std::vector<std::string> argv{"/usr/bin/redis-cli", "-h", "127.0.0.1", "-p",
                                  std::to_string(port)};
    argv.insert(argv.end(), words.begin(), words.end());
    RunResult r = run(argv);
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> keys;
    std::istringstream lines(cli({"--scan", "--pattern", "kbuild:entry:*"}));
    for (std::string line; std::getline(lines, line);) keys.push_back(line);
    return keys;
  }
};

// Sources shared by the machines at the same absolute paths (as Inductor's
// /tmp/torchinductor_USER), each machine with its own cache, compiler copy
// and working directory.
struct Fleet {
  TempDir shared;
  std::string count = shared / "compiler-runs";
  explicit Fleet(int kernels = 1) {
    write_file(shared / "h.h", "#define VALUE 41\n");
    for (int i = 0; i < kernels; ++i)
      write_file(
          shared / (kernel_name(i) + ".cpp"),
          "#include \"h.h\"\nextern \"C\" int f() { return VALUE + " + std::to_string(i) + "; }\n");
  }
  int runs() const {
    std::error_code ec;
    if (!fs::exists(count, ec)) return 0;
    std::string text = read_file(count);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
};

// A kernel whose library holds 3 MB of 64 symbols chosen at random: still
// over 1 MB as a zstd frame (an entry too large for a server's limit).
std::string incompressible_kernel() {
  std::string source = "extern \"C\" const char blob[] =\n";
  std::uint32_t x = 12345;
  for (int line = 0; line < (3 << 20) / 64; ++line) {
    source += '"';
    for (int i = 0; i < 64; ++i) {
      x = x * 1664525u + 1013904223u;
      source += "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-"[x >> 26];
    }
    source += "\"\n";
  }
  return source + ";\nextern \"C\" int f() { return blob[0]; }\n";
}

struct Machine {
  TempDir home, cwd;
  std::string cxx = cwd / "toolchain/bin/g++-copy";
  std::map<std::string, std::string> env;

  Machine(const Fleet& fleet, const std::string& url) {
    // The compiler counts its compiles (not kbuild's -v / -print-search-dirs
    // questions), then is g++; the count file comes from the environment so
    // every machine's copy has the same bytes.
    write_file(cxx,
               "#!/bin/sh\necho \"$(date +%s.%N) $$ $*\" >> \"$KBUILD_TEST_COUNT.log\"\ncase "
               "\"$*\" in *-print-search-dirs*|*\"-E -v -x c++ /dev/null\"*) ;; "
               "*) echo run >> \"$KBUILD_TEST_COUNT\"; if [ -n \"$KBUILD_TEST_HOLD\" ]; then sleep "
               "\"$KBUILD_TEST_HOLD\"; exit 1; fi;; esac\nexec /usr/bin/g++ \"$@\"\n",
               true);
    env = {{"KBUILD_TEST_COUNT", fleet.count}, {"KBUILD_REMOTE_CACHE", url}};
  }
  RunResult build(const Fleet& fleet, int kernel = 0, std::map<std::string, std::string> extra = {},
                  std::vector<std::string> args = {}) {
    std::string name = kernel_name(kernel);
    std::vector<std::string> argv{
        "--no-torch",         "--cxx", cxx, fleet.shared / (name + ".cpp"), "-o",
        cwd / (name + ".so"), "-v"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::map<std::string, std::string> vars = env;
    for (auto& [k, v] : extra) vars[k] = v;
    // Another working directory per machine (the test runs one build at a
    // time here; the concurrent test does not change directory).
    fs::path before = fs::current_path();
    fs::current_path(cwd.path());
    RunResult r = run_kbuild(argv, home.str(), vars);
    fs::current_path(before);
    return r;
  }
};

bool remote_hit(const RunResult& r) {
  return r.err.find("kbuild: info: cache: hit (remote)") != std::string::npos;
}
int warnings(const RunResult& r) {
  int n = 0;
  for (std::size_t at = 0; (at = r.err.find("kbuild: warning:", at)) != std::string::npos; ++at)
    ++n;
  return n;
}

}  // namespace

TEST_CASE("two machines share a compile: another compiler path and mtime, another directory",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine a(fleet, redis.url), b(fleet, redis.url);
  // b's compiler: the same bytes, at another path, with another mtime.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(b.cxx, read_file(a.cxx), true);
  RunResult first = a.build(fleet);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_FALSE(remote_hit(first));
  CHECK(redis.entries().size() == 1);
  RunResult second = b.build(fleet);
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(remote_hit(second));
  CHECK(fleet.runs() == 1);
  CHECK(read_file(b.cwd / "k0.so") == read_file(a.cwd / "k0.so"));
  CHECK(warnings(second) == 0);
  // Now in b's local cache: a local hit, Redis not even asked.
  fs::remove(b.cwd / "k0.so");
  RunResult third = b.build(fleet);
  CHECK(third.err.find("kbuild: info: cache: hit") != std::string::npos);
  CHECK(third.err.find("kbuild: info: cache: hit (remote)") == std::string::npos);  // local
  RunResult stats = run_kbuild({"cache", "stats"}, b.home.str());
  CHECK(stats.out.find("remote hits      1\n") != std::string::npos);
  CHECK(stats.out.find("remote down      0 bytes") == std::string::npos);
  // Issue 46: the remote hit is not a local hit too; only the third was local.
  CHECK(stats.out.find("local hits       1\n") != std::string::npos);
  CHECK(stats.out.find("misses           0\n") != std::string::npos);
  const nlohmann::json j =
      nlohmann::json::parse(run_kbuild({"cache", "stats", "--json"}, b.home.str()).out);
  CHECK(j["hits"] == 1);
  CHECK(j["misses"] == 0);
  CHECK(j["remote"]["hits"] == 1);
}

TEST_CASE("another compiler build or a header that differs here does not share", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine a(fleet, redis.url), b(fleet, redis.url);
  write_file(b.cxx, read_file(a.cxx) + "# another build\n", true);
  REQUIRE(a.build(fleet).exit_code == 0);
  RunResult other_compiler = b.build(fleet);
  CHECK_FALSE(remote_hit(other_compiler));
  CHECK(fleet.runs() == 2);
  Machine c(fleet, redis.url);
  write_file(fleet.shared / "h.h", "#define VALUE 42\n");  // read by the compiler, not in the key
  RunResult other_header = c.build(fleet);
  CHECK_FALSE(remote_hit(other_header));
  CHECK(fleet.runs() == 3);
}

TEST_CASE("a corrupted or truncated entry is a miss with a warning, and is dropped",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine a(fleet, redis.url);
  REQUIRE(a.build(fleet).exit_code == 0);
  auto keys = redis.entries();
  REQUIRE(keys.size() == 1);
  auto client = redis.client();
  REQUIRE(client);
  auto value = client->get(keys[0]);
  REQUIRE((value && *value));
  const std::string good = **value;
  // The output is stored as a zstd frame: the whole entry, its manifest
  // included, is smaller than the library it holds.
  CHECK(good.size() < fs::file_size(a.cwd / "k0.so"));
  for (bool truncate : {false, true}) {
    std::string bad = good;
    if (truncate)
      bad.resize(bad.size() / 2);
    else
      bad[bad.size() - 100] ^= 1;  // one bit of the output
    REQUIRE(client->set(keys[0], bad));
    Machine b(fleet, redis.url);
    int before = fleet.runs();
    RunResult r = b.build(fleet);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_FALSE(remote_hit(r));
    CHECK(r.err.find("is damaged (truncated or altered); not used, dropped") != std::string::npos);
    CHECK(warnings(r) == 1);
    CHECK(fleet.runs() == before + 1);
    // b compiled and uploaded a good entry in its place.
    auto now = client->get(keys[0]);
    REQUIRE((now && *now));
    CHECK(**now == good);
  }
}

TEST_CASE("with a verify key only signed entries are used, and a reader cannot sign",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  kbuild::SigningKeys keys = kbuild::generate_signing_keys(),
                      other = kbuild::generate_signing_keys();
  Machine unsigned_writer(fleet, redis.url), writer(fleet, redis.url), reader(fleet, redis.url),
      stranger(fleet, redis.url);
  reader.env["KBUILD_REMOTE_CACHE_VERIFY_KEY"] = keys.public_hex;
  // An unsigned entry: not used by a reader that requires signatures.
  REQUIRE(unsigned_writer.build(fleet).exit_code == 0);
  RunResult r = reader.build(fleet, 0, {}, {"--remote-cache-readonly"});
  INFO(r.err);
  CHECK_FALSE(remote_hit(r));
  CHECK(r.err.find("is not signed; not used") != std::string::npos);
  CHECK(fleet.runs() == 2);
  // Signed with another key: not used either.
  stranger.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = other.secret_hex;
  REQUIRE(stranger.build(fleet, 0, {}, {}).exit_code == 0);
  Machine reader2(fleet, redis.url);
  reader2.env = reader.env;
  RunResult bad = reader2.build(fleet, 0, {}, {"--remote-cache-readonly"});
  CHECK(bad.err.find("has a bad signature; not used") != std::string::npos);
  CHECK(fleet.runs() == 4);
  // Signed by the writer: used.
  writer.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = keys.secret_hex;
  REQUIRE(writer.build(fleet).exit_code == 0);
  Machine reader3(fleet, redis.url);
  reader3.env = reader.env;
  RunResult good = reader3.build(fleet, 0, {}, {"--remote-cache-readonly"});
  INFO(good.err);
  CHECK(remote_hit(good));
  CHECK(warnings(good) == 0);
  CHECK(fleet.runs() == 5);
}

// The entry as stored: a magic line, the manifest and the zstd frame (each
// after its size, 8 bytes), a digest (32 bytes), a signature (64 bytes).
TEST_CASE("a signed entry's frame swapped for a small one that expands big is refused unread",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  kbuild::SigningKeys keys = kbuild::generate_signing_keys();
  Machine writer(fleet, redis.url), reader(fleet, redis.url);
  writer.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = keys.secret_hex;
  REQUIRE(writer.build(fleet).exit_code == 0);
  auto entries = redis.entries();
  REQUIRE(entries.size() == 1);
  auto client = redis.client();
  REQUIRE(client);
  auto value = client->get(entries[0]);
  REQUIRE((value && *value));
  const std::string good = **value;
  std::size_t at = good.find('\n') + 1;
  auto take_sized = [&good, &at] {
    std::uint64_t n = 0;
    REQUIRE(good.size() - at >= sizeof n);
    std::memcpy(&n, good.data() + at, sizeof n);
    at += sizeof n;
    REQUIRE(good.size() - at >= n);
    at += n;
    return good.substr(at - n, n);
  };
  const std::string magic = good.substr(0, good.find('\n') + 1), manifest = take_sized(),
                    frame = take_sized(), digest_and_signature = good.substr(at);
  REQUIRE(digest_and_signature.size() == 32 + 64);
  // The writer's digest and signature kept, its frame swapped for 128 MiB of
  // zeros in a few KB.
  const std::string bomb = kbuild::zstd_compress(std::string(128u << 20, '\0'));
  REQUIRE(bomb.size() < (64u << 10));
  auto sized = [](const std::string& bytes) {
    const std::uint64_t n = bytes.size();
    return std::string(reinterpret_cast<const char*>(&n), sizeof n) + bytes;
  };
  REQUIRE(client->set(entries[0], magic + sized(manifest) + sized(bomb) + digest_and_signature));
  // The reader may write no file over 64 MiB (SIGXFSZ): expanding the frame
  // into the output would end it. Refused from the stored bytes, it builds.
  std::map<std::string, std::string> set = reader.env;
  set["KBUILD_REMOTE_CACHE_VERIFY_KEY"] = keys.public_hex;
  std::vector<std::string> unset;
  make_hermetic(reader.home.str(), set, unset);
  const fs::path before = fs::current_path();
  fs::current_path(reader.cwd.path());
  RunResult r = run({"/usr/bin/prlimit", "--fsize=" + std::to_string(64u << 20), "--",
                     kbuild_binary(), "--no-torch", "--cxx", reader.cxx, fleet.shared / "k0.cpp",
                     "-o", reader.cwd / "k0.so", "-v", "--remote-cache-readonly"},
                    set, unset);
  fs::current_path(before);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(remote_hit(r));
  CHECK(r.err.find("is damaged (truncated or altered); not used") != std::string::npos);
  CHECK(warnings(r) == 1);
  CHECK(fleet.runs() == 2);
  CHECK(fs::file_size(reader.cwd / "k0.so") < (1u << 20));
}

TEST_CASE("a --pch header's .gch and the kernels built with it are shared", "[e2e][remote]") {
  Redis redis;
  Fleet fleet(2);
  write_file(fleet.shared / "prefix.h", "#include <vector>\n#define PREFIX 2\n");
  Machine a(fleet, redis.url), b(fleet, redis.url);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(b.cxx, read_file(a.cxx), true);
  const std::vector<std::string> pch{"--pch", fleet.shared / "prefix.h"};
  RunResult first = a.build(fleet, 0, {}, pch);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err.find("pch: built") != std::string::npos);
  CHECK(fleet.runs() == 2);  // the header, the kernel
  CHECK(redis.entries().size() == 2);
  RunResult second = b.build(fleet, 0, {}, pch);
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(second.err.find("pch: reused") != std::string::npos);
  CHECK(remote_hit(second));
  CHECK(fleet.runs() == 2);  // b compiled nothing
  CHECK(read_file(b.cwd / "k0.so") == read_file(a.cwd / "k0.so"));
  CHECK(second.err.find("(a remote cache hit)") != std::string::npos);
  // The fetched .gch, now b's own, serves b's next kernel (same flags).
  RunResult third = b.build(fleet, 1, {}, pch);
  INFO(third.err);
  CHECK(third.exit_code == 0);
  CHECK(third.err.find("pch: reused") != std::string::npos);
  CHECK(fleet.runs() == 3);
}

// The header build is an entry of the one storage stack: a remote hit is
// installed in the local cache like any other (multilevel), so with b's
// pch/ emptied and Redis flushed the .gch is a local hit.
TEST_CASE("a --pch header's .gch fetched from Redis is a local entry too", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  write_file(fleet.shared / "prefix.h", "#include <vector>\n#define PREFIX 3\n");
  Machine a(fleet, redis.url), b(fleet, redis.url);
  const std::vector<std::string> pch{"--pch", fleet.shared / "prefix.h"};
  REQUIRE(a.build(fleet, 0, {}, pch).exit_code == 0);
  REQUIRE(fleet.runs() == 2);
  RunResult second = b.build(fleet, 0, {}, pch);
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(fleet.runs() == 2);
  CHECK(read_file(b.cwd / "k0.so") == read_file(a.cwd / "k0.so"));
  RunResult stats = run_kbuild({"cache", "stats"}, b.home.str());
  CHECK(stats.out.find("entries          2\n") != std::string::npos);  // the .gch, the kernel
  CHECK(stats.out.find("remote hits      2\n") != std::string::npos);

  for (auto& e : fs::directory_iterator(b.home / ".cache/kbuild/pch"))
    if (e.path().extension() != ".h") fs::remove(e.path());
  REQUIRE(redis.cli({"FLUSHALL"}) == "OK");
  RunResult local = b.build(fleet, 0, {}, pch);
  INFO(local.err);
  REQUIRE(local.exit_code == 0);
  CHECK(local.err.find("pch: reused") != std::string::npos);
  CHECK(local.err.find("(a cache hit)") != std::string::npos);
  // The .gch from b's own entry; the kernel compiled (the .gch written anew
  // has a new stamp, which its local key covers).
  CHECK(fleet.runs() == 3);
}

// The secret signs in memory only: no file kbuild writes (the cache, its
// pch/, the report), no message and no Redis value holds it, in hex or raw.
TEST_CASE("the signing key is never written anywhere", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  write_file(fleet.shared / "prefix.h", "#include <vector>\n#define PREFIX 6\n");
  kbuild::SigningKeys keys = kbuild::generate_signing_keys();
  auto seed = kbuild::decode_signing_key(keys.secret_hex, "s");
  REQUIRE(seed);
  Machine writer(fleet, redis.url);
  writer.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = keys.secret_hex;
  RunResult r = writer.build(
      fleet, 0, {}, {"--pch", fleet.shared / "prefix.h", "--report", writer.cwd / "report.json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(writer.cwd / "report.json"));
  auto holds_secret = [&](const std::string& bytes) {
    return bytes.find(keys.secret_hex) != std::string::npos ||
           bytes.find(*seed) != std::string::npos;
  };
  CHECK_FALSE(holds_secret(r.out + r.err));
  int files = 0;
  for (const fs::path& root : {writer.home.path(), writer.cwd.path()})
    for (auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file()) {
        ++files;
        INFO(e.path());
        CHECK_FALSE(holds_secret(read_file(e.path())));
      }
  CHECK(files > 4);
  auto client = redis.client();
  REQUIRE(client);
  std::istringstream lines(redis.cli({"--scan"}));
  int values = 0;
  for (std::string key; std::getline(lines, key);) {
    auto value = client->get(key);
    REQUIRE((value && *value));
    ++values;
    CHECK_FALSE(holds_secret(**value));
  }
  CHECK(values == 2);  // the .gch and the kernel, signed; no lease left
}

TEST_CASE("a read-only client with --pch gets the .gch and writes nothing", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  write_file(fleet.shared / "prefix.h", "#include <vector>\n#define PREFIX 4\n");
  Machine reader(fleet, redis.url);
  const std::vector<std::string> pch{"--pch", fleet.shared / "prefix.h", "--remote-cache-readonly"};
  RunResult alone = reader.build(fleet, 0, {}, pch);
  INFO(alone.err);
  REQUIRE(alone.exit_code == 0);
  CHECK(fleet.runs() == 2);
  CHECK(redis.cli({"DBSIZE"}) == "0");  // neither entry nor lease
  Machine writer(fleet, redis.url), reader2(fleet, redis.url);
  REQUIRE(writer.build(fleet, 0, {}, {"--pch", fleet.shared / "prefix.h"}).exit_code == 0);
  CHECK(fleet.runs() == 4);
  REQUIRE(redis.cli({"DBSIZE"}) == "2");
  RunResult fetched = reader2.build(fleet, 0, {}, pch);
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  CHECK(fetched.err.find("(a remote cache hit)") != std::string::npos);
  CHECK(remote_hit(fetched));
  CHECK(fleet.runs() == 4);
  CHECK(redis.cli({"DBSIZE"}) == "2");
}

TEST_CASE("an unsigned --pch .gch is refused by a reader with a verify key", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  write_file(fleet.shared / "prefix.h", "#include <vector>\n#define PREFIX 5\n");
  Machine writer(fleet, redis.url), reader(fleet, redis.url);
  const std::vector<std::string> pch{"--pch", fleet.shared / "prefix.h"};
  REQUIRE(writer.build(fleet, 0, {}, pch).exit_code == 0);
  REQUIRE(fleet.runs() == 2);
  RunResult keys = run_kbuild({"cache", "keygen"}, reader.home.str());
  std::smatch m;
  REQUIRE(
      std::regex_search(keys.out, m, std::regex("KBUILD_REMOTE_CACHE_VERIFY_KEY=([0-9a-f]{64})")));
  reader.env["KBUILD_REMOTE_CACHE_VERIFY_KEY"] = m[1].str();
  RunResult r =
      reader.build(fleet, 0, {}, {"--pch", fleet.shared / "prefix.h", "--remote-cache-readonly"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("is not signed; not used") != std::string::npos);
  CHECK(r.err.find("pch: built") != std::string::npos);
  CHECK(fleet.runs() == 4);
}

// KBUILD_CACHE_COMPRESS=1 changes how a local cache keeps an entry, never
// what is shared: a compressed local entry is uploaded as the compiler wrote
// it, and a remote hit is installed as a zstd frame in a compressing cache.
TEST_CASE("compressed local caches share with plain ones, both ways", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine a(fleet, redis.url), b(fleet, redis.url), c(fleet, redis.url);
  a.env["KBUILD_CACHE_COMPRESS"] = "1";
  c.env["KBUILD_CACHE_COMPRESS"] = "1";
  REQUIRE(a.build(fleet).exit_code == 0);
  auto outputs = [](const Machine& m) {
    std::vector<fs::path> found;
    for (auto& e : fs::recursive_directory_iterator(m.home / ".cache/kbuild/objects"))
      if (e.path().filename() == "output") found.push_back(e.path());
    return found;
  };
  const std::string built = read_file(a.cwd / "k0.so");
  REQUIRE(outputs(a).size() == 1);
  CHECK(read_file(outputs(a)[0]).rfind("\x28\xb5\x2f\xfd", 0) == 0);  // a zstd frame
  RunResult plain = b.build(fleet);
  INFO(plain.err);
  CHECK(remote_hit(plain));
  CHECK(read_file(b.cwd / "k0.so") == built);
  REQUIRE(outputs(b).size() == 1);
  CHECK(read_file(outputs(b)[0]) == built);  // b keeps it as it is
  RunResult compressed = c.build(fleet);
  INFO(compressed.err);
  CHECK(remote_hit(compressed));
  CHECK(read_file(c.cwd / "k0.so") == built);
  REQUIRE(outputs(c).size() == 1);
  CHECK(read_file(outputs(c)[0]).rfind("\x28\xb5\x2f\xfd", 0) == 0);
  fs::remove(c.cwd / "k0.so");
  RunResult local = c.build(fleet);
  CHECK(local.err.find("kbuild: info: cache: hit") != std::string::npos);
  CHECK_FALSE(remote_hit(local));
  CHECK(read_file(c.cwd / "k0.so") == built);
  CHECK(fleet.runs() == 1);
}

TEST_CASE("a unix socket address shares too", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  const std::string url = "unix://" + redis.dir / "redis.sock";
  Machine a(fleet, url), b(fleet, url);
  REQUIRE(a.build(fleet).exit_code == 0);
  RunResult r = b.build(fleet);
  INFO(r.err);
  CHECK(remote_hit(r));
  CHECK(fleet.runs() == 1);
}

TEST_CASE("cache keygen prints a signing key and the verify key that belongs to it",
          "[e2e][remote]") {
  TempDir home;
  RunResult r = run_kbuild({"cache", "keygen"}, home.str());
  REQUIRE(r.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m,
                            std::regex("KBUILD_REMOTE_CACHE_SIGNING_KEY=([0-9a-f]{64}).*\n"
                                       "KBUILD_REMOTE_CACHE_VERIFY_KEY=([0-9a-f]{64})\n")));
  auto secret = kbuild::decode_signing_key(m[1], "s");
  REQUIRE(secret);
  CHECK(kbuild::to_hex(kbuild::public_key_of(*secret)) == m[2]);
  CHECK(run_kbuild({"cache", "keygen"}, home.str()).out != r.out);  // fresh each time
}

TEST_CASE("a read-only client never writes to Redis", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine reader(fleet, redis.url);
  RunResult r = reader.build(fleet, 0, {}, {"--remote-cache-readonly"});
  REQUIRE(r.exit_code == 0);
  CHECK(redis.cli({"DBSIZE"}) == "0");
  CHECK(fleet.runs() == 1);
}

TEST_CASE("Redis absent, killed mid-build or stopped: the build succeeds with one warning",
          "[e2e][remote]") {
  Fleet fleet;
  SECTION("nothing listens") {
    Machine m(fleet, "redis://127.0.0.1:" + std::to_string(free_port()));
    RunResult r = m.build(fleet);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(warnings(r) == 1);
    CHECK(r.err.find("remote cache redis://127.0.0.1:") != std::string::npos);
  }
  SECTION("killed while the compiler runs") {
    Redis redis;
    Machine m(fleet, redis.url);
    // The compiler ends Redis (SIGKILL) before compiling.
    write_file(m.cxx,
               "#!/bin/sh\ncase \"$*\" in *-print-search-dirs*|*\"-E -v\"*) ;; *) kill -9 " +
                   std::to_string(redis.pid()) + ";; esac\nexec /usr/bin/g++ \"$@\"\n",
               true);
    RunResult r = m.build(fleet);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(warnings(r) == 1);
    CHECK(fs::exists(m.cwd / "k0.so"));
    CHECK(run_kbuild({"cache", "stats"}, m.home.str()).out.find("remote errors    1\n") !=
          std::string::npos);
  }
  SECTION("stopped (accepts connections, never answers)") {
    Redis redis;
    Machine m(fleet, redis.url);
    REQUIRE(::kill(redis.pid(), SIGSTOP) == 0);
    auto start = std::chrono::steady_clock::now();
    RunResult r = m.build(fleet, 0, {{"KBUILD_REMOTE_CACHE_TIMEOUT_MS", "300"}});
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::kill(redis.pid(), SIGCONT);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(warnings(r) == 1);
    CHECK(seconds < 20);
  }
}

TEST_CASE("a server gone before a large upload is one warning, not a broken pipe",
          "[e2e][remote]") {
  // Killed while the compiler runs: the first write of the upload meets a
  // closed connection, the next raises SIGPIPE (which would end kbuild).
  Redis redis;
  Fleet fleet;
  write_file(fleet.shared / "k0.cpp", incompressible_kernel());
  Machine m(fleet, redis.url);
  write_file(m.cxx,
             "#!/bin/sh\ncase \"$*\" in *-print-search-dirs*|*\"-E -v\"*) ;; *) kill -9 " +
                 std::to_string(redis.pid()) + ";; esac\nexec /usr/bin/g++ \"$@\"\n",
             true);
  RunResult r = m.build(fleet);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(warnings(r) == 1);
  CHECK(fs::exists(m.cwd / "k0.so"));
}

TEST_CASE("a server that refuses an entry (too large for it) is one warning", "[e2e][remote]") {
  Redis redis({"--proto-max-bulk-len", "1mb"});
  Fleet fleet;
  write_file(fleet.shared / "k0.cpp", incompressible_kernel());
  Machine m(fleet, redis.url);
  RunResult r = m.build(fleet);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(warnings(r) == 1);
  CHECK(fs::exists(m.cwd / "k0.so"));
}

TEST_CASE("16 concurrent builders of 8 kernels compile each kernel once", "[e2e][remote]") {
  Redis redis;
  Fleet fleet(8);
  std::vector<std::unique_ptr<Machine>> machines;
  for (int i = 0; i < 16; ++i) machines.push_back(std::make_unique<Machine>(fleet, redis.url));
  std::vector<std::future<RunResult>> builds;
  for (int i = 0; i < 16; ++i)
    builds.push_back(std::async(std::launch::async, [&, i] {
      std::string name = kernel_name(i % 8);
      return run_kbuild({"--no-torch", "--cxx", machines[i]->cxx, fleet.shared / (name + ".cpp"),
                         "-o", machines[i]->cwd / (name + ".so")},
                        machines[i]->home.str(), machines[i]->env);
    }));
  for (auto& b : builds) {
    RunResult r = b.get();
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(warnings(r) == 0);
  }
  CHECK(fleet.runs() == 8);
  CHECK(redis.entries().size() == 8);
}

TEST_CASE("a lease whose holder died is waited out, then the waiter compiles", "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine holder(fleet, redis.url), waiter(fleet, redis.url);
  // The holder takes the lease (1.5 s), starts compiling (its compiler
  // sleeps 2 s, then fails) and is killed (SIGKILL: no chance to release).
  std::map<std::string, std::string> vars = holder.env;
  vars["KBUILD_REMOTE_CACHE_LEASE_MS"] = "1500";
  vars["KBUILD_TEST_HOLD"] = "2";
  std::vector<std::string> argv{"/usr/bin/timeout",
                                "-s",
                                "KILL",
                                "1",
                                kbuild_binary(),
                                "--no-torch",
                                "--cxx",
                                holder.cxx,
                                fleet.shared / "k0.cpp",
                                "-o",
                                holder.cwd / "k0.so"};
  auto killed = std::async(std::launch::async, [&] {
    vars["HOME"] = holder.home.str();
    vars["XDG_CACHE_HOME"] = holder.home / ".cache";
    vars["XDG_CONFIG_HOME"] = holder.home / ".config";
    return run(argv, vars, {"KBUILD_CACHE_DIR"});
  });
  for (int i = 0; i < 200 && fleet.runs() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(fleet.runs() == 1);  // the holder compiles, under its lease
  auto start = std::chrono::steady_clock::now();
  RunResult r = waiter.build(fleet);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(killed.get().exit_code != 0);  // killed, with its process group
  CHECK(fleet.runs() == 2);            // the waiter compiled once the lease ran out
  CHECK(seconds > 0.3);                // it did wait
  CHECK(seconds < 30);
  CHECK(fs::exists(waiter.cwd / "k0.so"));
}

TEST_CASE("a device file's default address: used, but --remote-cache and the variable win",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet(3);
  Machine m(fleet, redis.url);
  m.env.erase("KBUILD_REMOTE_CACHE");
  const std::string dead = "redis://127.0.0.1:" + std::to_string(free_port());
  write_file(fleet.shared / "x.json",
             R"({"device": "x", "remote_cache": {"address": ")" + redis.url + R"("}})");
  const std::vector<std::string> device{"--config", fleet.shared / "x.json", "--device", "x"};
  // Only the device file names one: its builds upload there.
  RunResult from_file = m.build(fleet, 0, {}, device);
  INFO(from_file.err);
  REQUIRE(from_file.exit_code == 0);
  CHECK(from_file.err.find("remote cache: " + redis.url + " (from remote_cache in ") !=
        std::string::npos);
  CHECK(redis.entries().size() == 1);
  // The variable wins over the file: the dead address is tried (one warning).
  RunResult from_env = m.build(fleet, 1, {{"KBUILD_REMOTE_CACHE", dead}}, device);
  INFO(from_env.err);
  CHECK(from_env.exit_code == 0);
  CHECK(warnings(from_env) == 1);
  CHECK(from_env.err.find("remote cache " + dead) != std::string::npos);
  // Issue 46: the warning says how to stop using the address where it came from.
  CHECK(from_env.err.find("(check the server, or unset KBUILD_REMOTE_CACHE)") != std::string::npos);
  CHECK(from_env.err.find("drop --remote-cache") == std::string::npos);
  CHECK(redis.entries().size() == 1);
  // The option wins over both.
  std::vector<std::string> with_flag = device;
  with_flag.insert(with_flag.end(), {"--remote-cache", redis.url});
  RunResult from_flag = m.build(fleet, 2, {{"KBUILD_REMOTE_CACHE", dead}}, with_flag);
  INFO(from_flag.err);
  CHECK(from_flag.exit_code == 0);
  CHECK(warnings(from_flag) == 0);
  CHECK(from_flag.err.find("(from --remote-cache)") != std::string::npos);
  CHECK(redis.entries().size() == 2);
  // Another device (no default) uses none.
  RunResult other = m.build(fleet, 1);
  CHECK(other.err.find("remote cache:") == std::string::npos);
  CHECK(redis.entries().size() == 2);
}

// Issue 46: "drop --remote-cache" was said whatever had named the address.
TEST_CASE("a dead server's warning says how to stop using it where its address came from",
          "[e2e][remote]") {
  Fleet fleet(3);
  const std::string dead = "redis://127.0.0.1:" + std::to_string(free_port());
  Machine m(fleet, dead);
  auto warning_of = [](const RunResult& r) {
    const std::size_t at = r.err.find("kbuild: warning: remote cache ");
    return at == std::string::npos ? std::string() : r.err.substr(at, r.err.find('\n', at) - at);
  };
  // From the variable.
  RunResult from_env = m.build(fleet, 0);
  INFO(from_env.err);
  CHECK(from_env.exit_code == 0);
  CHECK(warnings(from_env) == 1);
  CHECK(warning_of(from_env).ends_with("(check the server, or unset KBUILD_REMOTE_CACHE)"));
  // From the option (the variable unset).
  m.env.erase("KBUILD_REMOTE_CACHE");
  RunResult from_flag = m.build(fleet, 1, {}, {"--remote-cache", dead});
  INFO(from_flag.err);
  CHECK(from_flag.exit_code == 0);
  CHECK(warnings(from_flag) == 1);
  CHECK(warning_of(from_flag).ends_with("(check the server, or drop --remote-cache)"));
  // From a device file: it is named.
  const fs::path file = fleet.shared / "dead.json";
  write_file(file, R"({"device": "x", "remote_cache": {"address": ")" + dead + R"("}})");
  RunResult from_file = m.build(fleet, 2, {}, {"--device-file", file.string(), "--device", "x"});
  INFO(from_file.err);
  CHECK(from_file.exit_code == 0);
  CHECK(warnings(from_file) == 1);
  CHECK(warning_of(from_file).ends_with("(check the server, or remove the remote_cache in " +
                                        file.string() + ", or give --no-cache)"));
}

TEST_CASE("kbuild cache check refuses exactly what a routed compile refuses, in its words",
          "[e2e][remote]") {
  TempDir home, dir;
  write_file(dir / "k.cpp", "int f() { return 1; }\n");
  auto first_error = [](const RunResult& r) {
    const std::size_t at = r.err.find("kbuild: error[");
    return at == std::string::npos ? std::string() : r.err.substr(at, r.err.find('\n', at) - at);
  };
  for (const std::string address :
       {"rediss://cache:6379", "redis:/:Pa/ss@cache:1", "redis://:correct horse@cache:1/x",
        "unix://relative.sock", "redis://cache:99999"}) {
    INFO(address);
    const std::map<std::string, std::string> env{{"KBUILD_REMOTE_CACHE", address}};
    RunResult compile =
        run_kbuild({"cc", "--", "g++", "-c", dir / "k.cpp", "-o", dir / "k.o"}, home.str(), env);
    RunResult check = run_kbuild({"cache", "check"}, home.str(), env);
    CHECK(compile.exit_code == 2);
    CHECK(check.exit_code == 2);
    CHECK_FALSE(first_error(check).empty());
    CHECK(first_error(check) == first_error(compile));
    for (const char* part : {"Pa/ss", "correct", "horse"})
      CHECK(check.err.find(part) == std::string::npos);
  }
  // Taken: shown with its userinfo hidden, nothing connected to.
  RunResult taken = run_kbuild({"cache", "check"}, home.str(),
                               {{"KBUILD_REMOTE_CACHE", "redis://:correct horse@127.0.0.1:1/2"}});
  CHECK(taken.exit_code == 0);
  CHECK(taken.out == "remote cache: redis://***@127.0.0.1:1/2 (from KBUILD_REMOTE_CACHE)\n");
  RunResult flag =
      run_kbuild({"cache", "check", "--remote-cache", "unix:///run/a@b.sock"}, home.str());
  CHECK(flag.exit_code == 0);
  CHECK(flag.out == "remote cache: unix:///run/a@b.sock (from --remote-cache)\n");
  RunResult none = run_kbuild({"cache", "check"}, home.str());
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("no remote cache") == 0);
  // Never a setting silently ignored.
  RunResult stats = run_kbuild({"cache", "stats", "--remote-cache", "redis://h:1"}, home.str());
  CHECK(stats.exit_code == 2);
  CHECK(stats.err.find("--remote-cache is for kbuild cache check") != std::string::npos);
}

TEST_CASE("a password in the address (AUTH); a wrong one is one warning and a miss",
          "[e2e][remote]") {
  Redis redis({"--requirepass", "s3cret"});
  Fleet fleet(2);
  auto dbsize = [&redis] { return redis.cli({"-a", "s3cret", "--no-auth-warning", "DBSIZE"}); };
  const std::string host = "127.0.0.1:" + std::to_string(redis.port);
  Machine writer(fleet, "redis://:s3cret@" + host);
  RunResult written = writer.build(fleet);
  INFO(written.err);
  REQUIRE(written.exit_code == 0);
  CHECK(warnings(written) == 0);
  CHECK(dbsize() == "1");
  CHECK(written.err.find("s3cret") == std::string::npos);  // -v names the server, not the password
  // The default user by name (Redis 6 ACL), from another machine: a hit.
  Machine reader(fleet, "redis://default:s3cret@" + host);
  RunResult read = reader.build(fleet);
  INFO(read.err);
  CHECK(remote_hit(read));
  // A wrong password: the build goes on without the remote cache.
  Machine wrong(fleet, "redis://:nope@" + host);
  RunResult refused = wrong.build(fleet, 1);
  INFO(refused.err);
  CHECK(refused.exit_code == 0);
  CHECK(warnings(refused) == 1);
  CHECK(refused.err.find("AUTH") != std::string::npos);
  CHECK(refused.err.find("nope") == std::string::npos);
  CHECK_FALSE(remote_hit(refused));
  CHECK(dbsize() == "1");
  // No password at all: Redis refuses the GET (NOAUTH), the same one warning.
  Machine none(fleet, "redis://" + host);
  RunResult anonymous = none.build(fleet, 1);
  CHECK(anonymous.exit_code == 0);
  CHECK(warnings(anonymous) == 1);
  CHECK(dbsize() == "1");
}

namespace {

// Every regular file under `root` that holds `secret`.
std::vector<std::string> files_holding(const fs::path& root, const std::string& secret) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec) && read_file(it->path()).find(secret) != std::string::npos)
      found.push_back(it->path().string());
  return found;
}

std::string value_after(const std::string& text, const std::string& name) {
  const std::size_t at = text.find(name + "=");
  REQUIRE(at != std::string::npos);
  const std::size_t start = at + name.size() + 1;
  return text.substr(start, text.find_first_of(" \n", start) - start);
}

}  // namespace

TEST_CASE("secrets are never shown nor written: report, -v, doctor, --version, a bad address",
          "[e2e][remote][secrets]") {
  const std::string password = "Pa55-w0rd-q7";
  Redis redis({"--requirepass", password});
  Fleet fleet(2);
  const std::string host = "127.0.0.1:" + std::to_string(redis.port);
  Machine m(fleet, "redis://:" + password + "@" + host);
  TempDir keyhome;
  RunResult keygen = run_kbuild({"cache", "keygen"}, keyhome.str());
  REQUIRE(keygen.exit_code == 0);
  const std::string signing = value_after(keygen.out, "KBUILD_REMOTE_CACHE_SIGNING_KEY");
  const std::string verify = value_after(keygen.out, "KBUILD_REMOTE_CACHE_VERIFY_KEY");
  m.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = signing;
  m.env["KBUILD_REMOTE_CACHE_VERIFY_KEY"] = verify;
  const std::string report = m.cwd / "report.json";
  std::vector<RunResult> outputs;
  outputs.push_back(m.build(fleet, 0, {}, {"--report", report}));
  INFO(outputs.back().err);
  REQUIRE(outputs.back().exit_code == 0);
  const std::string text = read_file(report);
  CHECK(text.find("\"KBUILD_REMOTE_CACHE\": \"redis://***@" + host) != std::string::npos);
  CHECK(text.find("\"KBUILD_REMOTE_CACHE_SIGNING_KEY\": \"set\"") != std::string::npos);
  // The address as an option, a dry run, a failed build with its report.
  const std::string with_password = "redis://default:" + password + "@" + host;
  outputs.push_back(m.build(fleet, 1, {}, {"--remote-cache", with_password, "--dry-run"}));
  outputs.push_back(m.build(fleet, 1, {},
                            {"--remote-cache=" + with_password, "--report", m.cwd / "r2.json",
                             "--cxx", "/nonexistent/g++"}));
  CHECK(outputs.back().exit_code != 0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"doctor", "--json", "--no-torch"}, {"doctor", "--no-torch"}, {"--version"}})
    outputs.push_back(run_kbuild(args, m.home.str(), m.env));
  // The colon forgotten: the whole userinfo is masked in the usage error.
  RunResult malformed =
      m.build(fleet, 1, {{"KBUILD_REMOTE_CACHE", "redis://" + password + "@" + host}});
  CHECK(malformed.exit_code == 2);
  CHECK(malformed.err.find("redis://***@" + host) != std::string::npos);
  outputs.push_back(malformed);
  // A mistyped scheme is refused, and neither its error nor the report
  // written on failure quotes what follows it.
  RunResult mistyped =
      m.build(fleet, 1, {{"KBUILD_REMOTE_CACHE", "redis:/:" + password + "@" + host}},
              {"--report", m.cwd / "r3.json"});
  CHECK(mistyped.exit_code == 2);
  CHECK(mistyped.err.find("'redis:/***@" + host + "'") != std::string::npos);
  CHECK(read_file(m.cwd / "r3.json").find("redis:/***@" + host) != std::string::npos);
  outputs.push_back(mistyped);
  // A password with a blank is sent whole as AUTH, and hidden whole: in -v,
  // the report's environment and argv, and the "building without it" warning.
  const std::vector<std::string> spaced_secrets{"c0rrect h0rse", "c0rrect", "h0rse",
                                                "wr0ng st4ple",  "wr0ng",   "st4ple"};
  Redis spaced;
  REQUIRE(spaced.cli({"CONFIG", "SET", "requirepass", "c0rrect h0rse"}) == "OK");
  const std::string spaced_host = "127.0.0.1:" + std::to_string(spaced.port);
  Machine b(fleet, "redis://:c0rrect h0rse@" + spaced_host);
  outputs.push_back(b.build(fleet, 0, {}, {"--report", b.cwd / "report.json"}));
  CHECK(outputs.back().exit_code == 0);
  CHECK(warnings(outputs.back()) == 0);  // AUTH took the whole password
  CHECK(outputs.back().err.find("remote cache: redis://***@" + spaced_host) != std::string::npos);
  CHECK(read_file(b.cwd / "report.json")
            .find("\"KBUILD_REMOTE_CACHE\": \"redis://***@" + spaced_host) != std::string::npos);
  outputs.push_back(
      b.build(fleet, 1, {{"KBUILD_REMOTE_CACHE", "redis://:wr0ng st4ple@" + spaced_host}}));
  CHECK(warnings(outputs.back()) == 1);
  CHECK(outputs.back().err.find("remote cache redis://***@" + spaced_host) != std::string::npos);
  outputs.push_back(b.build(fleet, 1, {},
                            {"--remote-cache=redis://:wr0ng st4ple@" + spaced_host, "--report",
                             b.cwd / "r2.json", "--cxx", "/nonexistent/g++"}));
  CHECK(outputs.back().exit_code != 0);
  outputs.push_back(b.build(fleet, 1, {},
                            {"--remote-cache", "redis://:wr0ng st4ple@" + spaced_host, "--report",
                             b.cwd / "r3.json", "--cxx", "/nonexistent/g++"}));
  CHECK(outputs.back().exit_code != 0);
  std::vector<std::string> secrets{password, signing, verify};
  secrets.insert(secrets.end(), spaced_secrets.begin(), spaced_secrets.end());
  for (const RunResult& r : outputs) {
    INFO(r.out + r.err);
    for (const std::string& secret : secrets) {
      CHECK(r.out.find(secret) == std::string::npos);
      CHECK(r.err.find(secret) == std::string::npos);
    }
  }
  for (const std::string& secret : secrets) {
    INFO(secret);
    for (const Machine* machine : {&m, &b}) {
      CHECK(files_holding(machine->home.path(), secret).empty());
      CHECK(files_holding(machine->cwd.path(), secret).empty());
    }
  }
}

namespace {

// Starts `argv` with `env`, its stdout and stderr to `err_path`, and returns
// its pid (the caller waits for it); -1 when it cannot. Everything the
// child uses is made before the fork (this process has threads).
pid_t remote_cache_test_spawn(const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& env,
                              const fs::path& err_path) {
  std::vector<std::string> env_lines;
  for (const auto& [name, value] : env) env_lines.push_back(name + "=" + value);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env_lines) envp.push_back(const_cast<char*>(e.c_str()));
  args.push_back(nullptr);
  envp.push_back(nullptr);
  const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (err < 0 || null < 0) return -1;
  sigset_t none;
  sigemptyset(&none);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGINT, SIG_DFL);
    if (::dup2(null, 0) < 0 || ::dup2(err, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(127);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(err);
  ::close(null);
  return pid;
}

}  // namespace

TEST_CASE("Ctrl-C ends the wait for another builder's compile at once: exit 130, nothing built",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine holder(fleet, redis.url), waiter(fleet, redis.url);
  std::map<std::string, std::string> vars = holder.env;
  vars["KBUILD_TEST_HOLD"] = "4";  // its compiler sleeps, then fails
  vars["HOME"] = holder.home.str();
  vars["XDG_CACHE_HOME"] = holder.home / ".cache";
  vars["XDG_CONFIG_HOME"] = holder.home / ".config";
  auto held = std::async(std::launch::async, [&] {
    return run({kbuild_binary(), "--no-torch", "--cxx", holder.cxx, fleet.shared / "k0.cpp", "-o",
                holder.cwd / "k0.so"},
               vars, {"KBUILD_CACHE_DIR"});
  });
  for (int i = 0; i < 300 && fleet.runs() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(fleet.runs() == 1);  // the holder compiles under its lease
  // The waiter, its stderr to a file: sent SIGINT once it says it waits
  // (said when the wait begins, not at its end), never before.
  std::map<std::string, std::string> wvars = waiter.env;
  wvars["HOME"] = waiter.home.str();
  wvars["XDG_CACHE_HOME"] = waiter.home / ".cache";
  wvars["XDG_CONFIG_HOME"] = waiter.home / ".config";
  const fs::path err_path = waiter.home / "waiter.err";
  const pid_t pid =
      remote_cache_test_spawn({kbuild_binary(), "--no-torch", "--cxx", waiter.cxx,
                               fleet.shared / "k0.cpp", "-o", waiter.cwd / "k0.so", "-v"},
                              environment_with(wvars, {"KBUILD_CACHE_DIR"}), err_path);
  REQUIRE(pid > 0);
  const std::string notice = "kbuild: info: waiting for another builder's compile (remote key ";
  bool waiting = false;
  for (int i = 0; i < 2000 && !waiting; ++i) {  // at most 20 s
    waiting = read_file(err_path).find(notice) != std::string::npos;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string said = read_file(err_path);
  INFO(said);
  const bool ended_early = ends_within(pid, 0);
  if (!waiting || ended_early) ::kill(pid, SIGKILL);
  int status = 0;
  if (!waiting || ended_early) ::waitpid(pid, &status, 0);
  REQUIRE(waiting);
  CHECK(said.find(", up to 60 s)") != std::string::npos);
  REQUIRE_FALSE(ended_early);
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  const bool ended = ends_within(pid, 1500);  // not the 4 s the holder takes, nor the 60 s lease
  if (!ended) ::kill(pid, SIGKILL);
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string err = read_file(err_path);
  INFO(err);
  CHECK(ended);
  CHECK(seconds < 1.5);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(err.find("interrupted by signal 2 while waiting for another builder's compile") !=
        std::string::npos);
  CHECK(err.find("the compiler was stopped") == std::string::npos);
  CHECK(err.find("nothing was compiled") != std::string::npos);
  CHECK_FALSE(fs::exists(waiter.cwd / "k0.so"));
  CHECK(fleet.runs() == 1);  // the waiter compiled nothing
  CHECK(held.get().exit_code != 0);
}

TEST_CASE("compiler mode shares through Redis: a second machine's routed compile is a remote hit",
          "[e2e][remote][cc]") {
  Redis redis;
  Fleet fleet(1);
  Machine a(fleet, redis.url), b(fleet, redis.url);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(b.cxx, read_file(a.cxx), true);  // the same compiler at another path
  auto cc = [&fleet](Machine& m, const std::string& output) {
    std::map<std::string, std::string> vars = m.env;
    vars["KBUILD_VERBOSE"] = "1";
    return run_kbuild(
        {"cc", "--", m.cxx, "-shared", "-fPIC", "-O2", fleet.shared / "k0.cpp", "-o", output},
        m.home.str(), vars);
  };
  RunResult first = cc(a, a.cwd / "k0.so");
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err.find("remote cache: " + redis.url) != std::string::npos);
  CHECK(redis.entries().size() == 1);
  RunResult second = cc(b, b.cwd / "k0.so");  // an empty local cache
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(second.err.find("cache: hit (remote)") != std::string::npos);
  CHECK(fleet.runs() == 1);
  CHECK(read_file(b.cwd / "k0.so") == read_file(a.cwd / "k0.so"));
  // Read-only through the variable: a third machine reads, never writes.
  Machine c(fleet, redis.url);
  c.env["KBUILD_REMOTE_CACHE_READONLY"] = "1";
  write_file(fleet.shared / "k1.cpp", "extern \"C\" int f() { return 2; }\n");
  std::map<std::string, std::string> vars = c.env;
  RunResult third = run_kbuild(
      {"cc", "--", c.cxx, "-shared", "-fPIC", fleet.shared / "k1.cpp", "-o", c.cwd / "k1.so"},
      c.home.str(), vars);
  INFO(third.err);
  REQUIRE(third.exit_code == 0);
  CHECK(redis.entries().size() == 1);
}

TEST_CASE("trees at other paths miss; with KBUILD_REMOTE_CACHE_BASE_DIR they share, on own files",
          "[e2e][remote][cc][base-dir]") {
  Redis redis;
  Fleet fleet;
  TempDir roots;
  // Two checkouts of one tree at different paths (per-job cache dirs).
  auto tree = [&roots](const std::string& name, const std::string& value) {
    fs::path base = roots.path() / name;
    write_file(base / "inc/h.h", "#define VALUE " + value + "\n");
    write_file(base / "k.cpp",
               "#include \"h.h\"\nextern \"C\" int f() { return VALUE; }\n"
               "extern \"C\" const char* where() { return __FILE__; }\n");
    return base;
  };
  auto cc = [&fleet](Machine& m, const fs::path& base, bool opt_in,
                     const std::vector<std::string>& extra = {}) {
    std::map<std::string, std::string> vars = m.env;
    vars["KBUILD_VERBOSE"] = "1";
    if (opt_in) vars["KBUILD_REMOTE_CACHE_BASE_DIR"] = base.string() + "/";
    fs::remove(base / "k.so");
    std::vector<std::string> argv{"cc",    "--",  fleet.shared / "g++",          "-shared",
                                  "-fPIC", "-O2", "-I" + (base / "inc").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const std::string& w :
         {(base / "k.cpp").string(), std::string("-o"), (base / "k.so").string()})
      argv.push_back(w);
    return run_kbuild(argv, m.home.str(), vars);
  };
  Machine first(fleet, redis.url);
  write_file(fleet.shared / "g++", read_file(first.cxx), true);  // one compiler path for all
  const fs::path a = tree("a", "41"), b = tree("b", "41");
  auto expect = [&](Machine& m, const fs::path& base, bool opt_in, bool hit,
                    const std::vector<std::string>& extra = {}) {
    RunResult r = cc(m, base, opt_in, extra);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(remote_hit(r) == hit);
  };
  // By default another path is another key: b compiles its own.
  expect(first, a, false, false);
  Machine second(fleet, redis.url);
  expect(second, b, false, false);
  CHECK(fleet.runs() == 2);
  const std::string own_b = read_file(b / "k.so");
  CHECK(own_b.find((b / "k.cpp").string()) != std::string::npos);
  // Opted in on both (a trailing slash is the same directory): one compile.
  Machine third(fleet, redis.url), fourth(fleet, redis.url);
  expect(third, a, true, false);  // an opt-in key is never a plain one
  CHECK(fleet.runs() == 3);
  expect(fourth, b, true, true);
  CHECK(fleet.runs() == 3);
  // The documented difference: the writer's path in __FILE__, nothing else here.
  const std::string shared_b = read_file(b / "k.so");
  CHECK(shared_b == read_file(a / "k.so"));
  CHECK(shared_b.find((a / "k.cpp").string()) != std::string::npos);
  CHECK(shared_b.size() == own_b.size());
  // The reader's own files are checked: a header that differs under its
  // base, or one that shadows it there, is a miss.
  const fs::path c = tree("c", "42");
  Machine fifth(fleet, redis.url);
  expect(fifth, c, true, false);
  const fs::path d = tree("d", "41");
  write_file(d / "h.h", "#define VALUE 43\n");  // beside the source: found first
  Machine sixth(fleet, redis.url);
  expect(sixth, d, true, false);
  CHECK(fleet.runs() == 5);
  // Another header of the same size and mtime (an image that fixes mtimes):
  // a remote hit compares contents, never the writer's stamps.
  const fs::path e = tree("e", "44");
  fs::last_write_time(e / "inc/h.h", fs::last_write_time(a / "inc/h.h"));
  Machine seventh(fleet, redis.url);
  expect(seventh, e, true, false);
  CHECK(fleet.runs() == 6);
  // A macro's value and an rpath under the base reach the binary as written:
  // never shared across paths.
  for (const std::string& flag : {std::string("-DDATA=/data"), std::string("-Wl,-rpath,/lib")}) {
    auto under = [&flag](const fs::path& base) {
      const std::size_t slash = flag.rfind('/');
      return flag.substr(0, slash) + base.string() + flag.substr(slash);
    };
    Machine writer(fleet, redis.url), reader(fleet, redis.url);
    const int before = fleet.runs();
    expect(writer, a, true, false, {under(a)});
    expect(reader, b, true, false, {under(b)});
    CHECK(fleet.runs() == before + 2);
  }
}

TEST_CASE("KBUILD_REMOTE_CACHE_BASE_DIR must be an absolute directory, not the root",
          "[e2e][remote][base-dir]") {
  Redis redis;
  TempDir home;
  write_file(home / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  for (const std::string& value : std::vector<std::string>{"relative/dir", "/", home / "missing"}) {
    RunResult r = run_kbuild(
        {"cc", "--", "/usr/bin/g++", "-shared", "-fPIC", home / "k.cpp", "-o", home / "k.so"},
        home.str(), {{"KBUILD_REMOTE_CACHE", redis.url}, {"KBUILD_REMOTE_CACHE_BASE_DIR", value}});
    INFO(value << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("KBUILD_REMOTE_CACHE_BASE_DIR") != std::string::npos);
    CHECK_FALSE(fs::exists(home / "k.so"));
  }
}

TEST_CASE("Ctrl-C under build-many ends every child's wait for a lease at once",
          "[e2e][remote][batch]") {
  Redis redis;
  Fleet fleet;
  // The server's unix socket: an address only this test's server can answer.
  Machine holder(fleet, redis.socket_url()), many(fleet, redis.socket_url());
  std::map<std::string, std::string> vars = holder.env;
  vars["KBUILD_TEST_HOLD"] = "5";
  vars["KBUILD_REMOTE_CACHE_CONNECT_TIMEOUT_MS"] = "10000";  // see below
  vars["KBUILD_REMOTE_CACHE_TIMEOUT_MS"] = "10000";
  vars["HOME"] = holder.home.str();
  vars["XDG_CACHE_HOME"] = holder.home / ".cache";
  vars["XDG_CONFIG_HOME"] = holder.home / ".config";
  auto held = std::async(std::launch::async, [&] {
    return run({kbuild_binary(), "--no-torch", "--cxx", holder.cxx, fleet.shared / "k0.cpp", "-o",
                holder.cwd / "k0.so"},
               vars, {"KBUILD_CACHE_DIR"});
  });
  for (int i = 0; i < 300 && fleet.runs() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(fleet.runs() == 1);
  // Two builds of the held kernel: both children wait for its lease.
  write_file(many.cwd / "m.json",
             "{\"common\": [\"--no-torch\", \"--cxx\", \"" + many.cxx + "\"], \"builds\": [[\"" +
                 fleet.shared / "k0.cpp" + "\", \"-o\", \"" + many.cwd / "a.so" + "\"], [\"" +
                 fleet.shared / "k0.cpp" + "\", \"-o\", \"" + many.cwd / "b.so" + "\"]]}");
  std::map<std::string, std::string> mvars = many.env;
  mvars["HOME"] = many.home.str();
  mvars["XDG_CACHE_HOME"] = many.home / ".cache";
  mvars["XDG_CONFIG_HOME"] = many.home / ".config";
  // A loaded host (CI runs two suites side by side) must not turn a slow
  // Redis answer into a remote failure, after which a child compiles
  // without waiting (fail-open, by design) and the test measures nothing.
  mvars["KBUILD_REMOTE_CACHE_CONNECT_TIMEOUT_MS"] = "10000";
  mvars["KBUILD_REMOTE_CACHE_TIMEOUT_MS"] = "10000";
  const auto start = std::chrono::steady_clock::now();
  RunResult r = run({"/usr/bin/timeout", "--preserve-status", "-s", "INT", "1", kbuild_binary(),
                     "build-many", many.cwd / "m.json", "-j", "2"},
                    mvars, {"KBUILD_CACHE_DIR"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.out << r.err);
  // Should a child compile: every compiler call, timed, and what the holder said.
  std::error_code ec;
  INFO("compiler calls:\n"
       << (fs::exists(fleet.count + ".log", ec) ? read_file(fleet.count + ".log") : ""));
  CHECK(r.exit_code == 130);
  CHECK(seconds < 3.5);  // not the 5 s the holder takes
  CHECK_FALSE(fs::exists(many.cwd / "a.so"));
  CHECK_FALSE(fs::exists(many.cwd / "b.so"));
  CHECK(fleet.runs() == 1);
  CHECK(held.get().exit_code != 0);
}

namespace {

// A torch whose vec headers build for every ISA (kbuild isa's probes).
std::string isa_torch(const TempDir& dir) {
  const std::string torch = dir / "torch";
  make_fake_torch(torch, true);
  const std::string vec = torch + "/include/ATen/cpu/vec/";
  fs::create_directories(vec);
  write_file(vec + "functional.h", "#pragma once\n");
  write_file(vec + "vec.h",
             "#pragma once\nnamespace at::vec { template <class T> struct Vectorized {\n"
             "  explicit Vectorized(T v) : v_(v) {}\n"
             "  Vectorized exp() const { return *this; }\n"
             "  void store(T* out) const { out[0] = v_; }\n  T v_; }; }\n");
  return torch;
}

}  // namespace

TEST_CASE("identical machines share kbuild isa's answers; a machine with another CPU never",
          "[e2e][remote][isa]") {
  Redis redis;
  TempDir shared;
  const std::string torch = isa_torch(shared);
  const std::vector<std::string> args = {"isa",
                                         "--json",
                                         "--torch-root",
                                         torch,
                                         "--cxx",
                                         "g++",
                                         "--python-include",
                                         shared / "py",
                                         "--python-libdir",
                                         shared / "py",
                                         "--remote-cache",
                                         redis.url};
  auto answer = [&](const TempDir& home) {
    RunResult r = run_kbuild(args, home.str(), {{"TMPDIR", home.str()}});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  TempDir first_home, second_home;
  nlohmann::json first = answer(first_home);
  CHECK(first["probes_compiled"].get<int>() > 0);
  CHECK(first["remote"]["stored"] == true);
  CHECK(first["remote"]["answers_used"] == 0);
  // The second machine (its own cache) builds no probe: every check is shared.
  nlohmann::json second = answer(second_home);
  CHECK(second["probes_compiled"] == 0);
  CHECK(second["remote"]["answers_used"] == second["checks"].size());
  CHECK(second["remote"]["stored"] == false);
  CHECK(second["valid"] == first["valid"]);
  CHECK(second["pick"] == first["pick"]);
  CHECK(second["checks"] == first["checks"]);

  // Another CPU (one flag more in /proc/cpuinfo, in a private mount
  // namespace): another key, so its own probes.
  if (::geteuid() != 0) {
    WARN("needs root for a private mount namespace: the other CPU is not tried");
    return;
  }
  TempDir other_home;
  std::string cpuinfo = read_file("/proc/cpuinfo");
  for (std::size_t at = 0; (at = cpuinfo.find("\nflags", at)) != std::string::npos; ++at)
    cpuinfo.insert(cpuinfo.find('\n', at + 1), " kbuild_test_flag");
  write_file(other_home / "cpuinfo", cpuinfo);
  std::string command = "mount --bind '" + (other_home / "cpuinfo") + "' /proc/cpuinfo && exec '" +
                        kbuild_binary() + "'";
  for (const std::string& word : args) command += " '" + word + "'";
  RunResult r =
      run({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", command},
          {{"KBUILD_CACHE_DIR", other_home / "cache"}, {"TMPDIR", other_home.str()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json other = nlohmann::json::parse(r.out);
  CHECK(other["cpu"]["identity"] != first["cpu"]["identity"]);
  CHECK(other["remote"]["answers_used"] == 0);
  CHECK(other["probes_compiled"].get<int>() > 0);
}

TEST_CASE("a remote hit replays the compiler's warnings and writes the reader's own depfile",
          "[e2e][remote][cc][replay][depfile]") {
  Redis redis;
  Fleet fleet;
  TempDir roots;
  auto tree = [&roots](const std::string& name) {
    fs::path base = roots.path() / name;
    write_file(base / "inc/h.h", "#define VALUE 41\n");
    write_file(base / "k.cpp", "#include \"h.h\"\nint f() { int unused; return VALUE; }\n");
    return base;
  };
  const fs::path a = tree("a"), b = tree("b");
  Machine first(fleet, redis.url), second(fleet, redis.url);
  write_file(fleet.shared / "g++", read_file(first.cxx), true);  // one compiler path for all
  auto words = [&fleet](const fs::path& base) {
    return std::vector<std::string>{fleet.shared / "g++",
                                    "-Wall",
                                    "-I" + (base / "inc").string(),
                                    "-MD",
                                    "-MP",
                                    "-c",
                                    base / "k.cpp",
                                    "-o",
                                    base / "k.o"};
  };
  auto cc = [&words](Machine& m, const fs::path& base) {
    std::map<std::string, std::string> vars = m.env;
    vars["KBUILD_VERBOSE"] = "1";
    vars["KBUILD_REMOTE_CACHE_BASE_DIR"] = base.string();
    std::vector<std::string> argv{"cc", "--"};
    for (const std::string& w : words(base)) argv.push_back(w);
    return run_kbuild(argv, m.home.str(), vars);
  };
  // What g++ alone writes in b.
  std::vector<std::string> plain = words(b);
  plain[0] = "/usr/bin/g++";
  REQUIRE(run(plain).exit_code == 0);
  const std::string expected = read_file(b / "k.d");
  CHECK(expected.find((b / "inc/h.h").string()) != std::string::npos);
  fs::remove(b / "k.d");
  fs::remove(b / "k.o");
  RunResult writer = cc(first, a);
  INFO(writer.err);
  REQUIRE(writer.exit_code == 0);
  CHECK(writer.err.find("unused variable") != std::string::npos);
  RunResult reader = cc(second, b);  // an empty local cache, another tree
  INFO(reader.err);
  REQUIRE(reader.exit_code == 0);
  CHECK(remote_hit(reader));
  CHECK(fleet.runs() == 1);
  CHECK(reader.err.find("unused variable") != std::string::npos);
  CHECK(read_file(b / "k.d") == expected);
}

// Issue 43's property, for remote hits: machine A builds and uploads; for
// each file the compiler read in the shared tree and each path it looked for
// there and did not find, a change (an edit, a file created where one was
// absent, a removal) makes machine B miss, never take A's entry; put back,
// B hits A's entry again. Each B is a fresh machine (its own cache), read-only
// to the remote, so A's entry is the only one there is.
TEST_CASE("after any change to a file A's compiler read or looked for, B misses the remote entry",
          "[e2e][remote][observed]") {
  Redis redis;
  Fleet fleet;
  const fs::path tree = fs::canonical(fleet.shared.path());
  write_file(tree / "inc1/.keep", "");
  write_file(tree / "inc2/p.h", "#include \"q.h\"\n#define VALUE (Q + 1)\n");
  write_file(tree / "inc2/q.h", "#define Q 1\n");
  write_file(tree / "inc3/p.h", "#define VALUE 30\n");  // shadowed by inc2/p.h
  write_file(tree / "k0.cpp", "#include \"p.h\"\nextern \"C\" int f() { return VALUE; }\n");
  const std::vector<std::string> flags{
      "-I", tree / "inc1", "-I", tree / "inc2", "-I", tree / "inc3", "--remote-cache-readonly"};
  Machine a(fleet, redis.url);
  RunResult stored = a.build(fleet, 0, {}, {flags.begin(), flags.end() - 1});
  INFO(stored.err);
  REQUIRE(stored.exit_code == 0);
  REQUIRE(redis.entries().size() == 1);
  // A's manifest, as its local cache holds it (the remote entry carries the same).
  nlohmann::json manifest;
  for (const auto& e : fs::recursive_directory_iterator(a.home.path()))
    if (e.path().filename() == "manifest" &&
        e.path().string().find("/objects/") != std::string::npos)
      manifest = nlohmann::json::from_cbor(read_file(e.path()));
  REQUIRE(manifest.contains("inputs"));
  REQUIRE(manifest.contains("absent"));
  auto ours = [&tree](const std::string& path) {
    return path.rfind(tree.string() + "/", 0) == 0 ? path.substr(tree.string().size() + 1)
                                                   : std::string();
  };
  // A fresh machine B: whether it took A's entry; a miss compiles (counted)
  // and its library says `value`.
  auto b_builds = [&](bool hit, int value) {
    Machine b(fleet, redis.url);
    const int before = fleet.runs();
    RunResult r = b.build(fleet, 0, {}, flags);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(remote_hit(r) == hit);
    CHECK(fleet.runs() == before + (hit ? 0 : 1));
    CHECK(call_f(b.cwd / "k0.so") == value);
  };
  b_builds(true, 2);
  int edited = 0, created = 0;
  for (const auto& input : manifest["inputs"]) {
    const std::string rel = ours(input[0].get<std::string>());
    if (rel.empty() || rel == "k0.cpp") continue;  // the source is in the key
    INFO("edited " << rel);
    const std::string before = read_file(tree / rel);
    write_file(tree / rel, before + "\n");  // another size, the same value
    b_builds(false, 2);
    write_file(tree / rel, before);
    b_builds(true, 2);
    ++edited;
  }
  for (const auto& absent : manifest["absent"]) {
    const std::string rel = ours(absent.get<std::string>());
    if (rel.empty() || !fs::is_directory(tree / fs::path(rel).parent_path())) continue;
    INFO("created " << rel);
    // A header where one was looked for takes the place of p.h or q.h; a
    // .gch that is no PCH is passed over by g++, but was looked for.
    write_file(tree / rel, "#define Q 8\n#define VALUE 9\n");
    Machine b(fleet, redis.url);
    RunResult r = b.build(fleet, 0, {}, flags);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(remote_hit(r));
    fs::remove(tree / rel);
    b_builds(true, 2);
    ++created;
  }
  CHECK(edited == 2);   // p.h and q.h
  CHECK(created >= 2);  // p.h beside k0.cpp and in inc1 (and the .gch g++ looks for)
  // Removed: inc2/p.h gone, g++ takes inc3/p.h; q.h gone, the build fails.
  const std::string p = read_file(tree / "inc2/p.h");
  fs::remove(tree / "inc2/p.h");
  b_builds(false, 30);
  write_file(tree / "inc2/p.h", p);
  b_builds(true, 2);
  fs::remove(tree / "inc2/q.h");
  Machine b(fleet, redis.url);
  RunResult gone = b.build(fleet, 0, {}, flags);
  CHECK(gone.exit_code != 0);
  CHECK_FALSE(remote_hit(gone));
}

// What `cache stats` says went up is what the server holds: the entry as
// stored, its signature included when a signing key signs it (the signed
// layer adds it on the way, after the remote cache counted).
TEST_CASE("remote bytes up count the entry as the server stores it, signed or not",
          "[e2e][remote]") {
  for (bool signing : {false, true}) {
    CAPTURE(signing);
    Redis redis;
    Fleet fleet;
    Machine writer(fleet, redis.url);
    if (signing)
      writer.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = kbuild::generate_signing_keys().secret_hex;
    REQUIRE(writer.build(fleet).exit_code == 0);
    const std::vector<std::string> entries = redis.entries();
    REQUIRE(entries.size() == 1);
    const std::string stored = redis.cli({"STRLEN", entries[0]});
    const nlohmann::json stats =
        nlohmann::json::parse(run_kbuild({"cache", "stats", "--json"}, writer.home.str()).out);
    CHECK(std::to_string(stats["remote"]["bytes_up"].get<std::uint64_t>()) == stored);
  }
}

// An entry over the remote's size limit stays local, and the build says so
// once (it was shared silently never, before: -v said nothing either).
TEST_CASE("an entry over the remote's size limit is kept here and said not shared, once",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet;
  Machine writer(fleet, redis.url);
  RunResult r = writer.build(fleet, 0, {{"KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES", "1000"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(warnings(r) == 1);
  CHECK(r.err.find("is not shared through the remote cache") != std::string::npos);
  CHECK(r.err.find("KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES is 1000") != std::string::npos);
  CHECK(redis.entries().empty());
  fs::remove(writer.cwd / "k0.so");
  CHECK(writer.build(fleet).err.find("kbuild: info: cache: hit") != std::string::npos);  // local
}

// A reader holds only the verify key: it cannot sign, so every verifier
// would refuse what it uploads, and an entry it refuses may be signed with
// a key it was not given (a misconfigured reader). It writes nothing and
// removes nothing, as --remote-cache-readonly.
TEST_CASE("a client with only a verify key neither removes nor replaces what it refuses",
          "[e2e][remote]") {
  Redis redis;
  Fleet fleet(2);
  kbuild::SigningKeys keys = kbuild::generate_signing_keys(),
                      other = kbuild::generate_signing_keys();
  Machine writer(fleet, redis.url), reader(fleet, redis.url);
  writer.env["KBUILD_REMOTE_CACHE_SIGNING_KEY"] = keys.secret_hex;
  REQUIRE(writer.build(fleet).exit_code == 0);
  const std::vector<std::string> entries = redis.entries();
  REQUIRE(entries.size() == 1);
  const std::string stored = redis.cli({"GET", entries[0]});
  reader.env["KBUILD_REMOTE_CACHE_VERIFY_KEY"] = other.public_hex;  // the wrong one
  RunResult r = reader.build(fleet);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("has a bad signature; not used") != std::string::npos);
  CHECK(redis.entries() == entries);
  CHECK(redis.cli({"GET", entries[0]}) == stored);  // the writer's, signed, still there
  CHECK(reader.build(fleet, 1).exit_code == 0);     // a kernel of its own: not uploaded
  CHECK(redis.entries().size() == 1);
}
