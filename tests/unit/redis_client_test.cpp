// RedisClient against a real redis-server on 127.0.0.1 (a free port, nothing
// saved, stopped with the test), and parse_redis_url on its own.
#include "util/redis_client.hpp"

#include "kbuild/error.hpp"
#include "util/process.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::BackgroundProcess;
using kbuild_test::TempDir;
using namespace std::chrono_literals;

namespace {

// A loopback socket bound to a port the kernel picked; listening when asked
// (a server that accepts and never answers), else closed to free the port.
int bound_socket(int& port, bool listen) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  port = ntohs(addr.sin_port);
  if (listen) REQUIRE(::listen(fd, 4) == 0);
  return fd;
}

int free_port() {
  int port = 0;
  ::close(bound_socket(port, false));
  return port;
}

struct Redis {
  TempDir dir;
  int port = free_port();
  std::unique_ptr<BackgroundProcess> server;

  Redis() {
    // Its log (stdout) says when it listens: both its sockets are bound
    // before the first "accept connections" line.
    server = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/usr/bin/timeout", "300", "/usr/bin/redis-server", "--bind",
                                 "127.0.0.1", "--port", std::to_string(port), "--save", "",
                                 "--appendonly", "no", "--dir", dir.str(), "--unixsocket",
                                 dir / "redis.sock", "--unixsocketperm", "700"},
        "accept connections");
    REQUIRE(connect(url()));
  }
  // What the server itself answers (redis-cli), for what RedisClient does not ask.
  std::string ask(const std::vector<std::string>& command) const {
    std::vector<std::string> argv{"/usr/bin/redis-cli", "-h", "127.0.0.1", "-p",
                                  std::to_string(port)};
    argv.insert(argv.end(), command.begin(), command.end());
    kbuild_test::RunResult r = kbuild_test::run(argv);
    REQUIRE(r.exit_code == 0);
    return r.out;
  }
  std::string url(const std::string& db = "") const {
    return "redis://127.0.0.1:" + std::to_string(port) + db;
  }
  static ServerResult<RedisClient> connect(const std::string& url) {
    Result<RedisAddress> address = parse_redis_url(url);
    REQUIRE(address);
    return RedisClient::connect(*address, RedisTimeouts{});
  }
  RedisClient client(const std::string& db = "") const {
    ServerResult<RedisClient> c = connect(url(db));
    REQUIRE(c);
    return std::move(*c);
  }
};

}  // namespace

TEST_CASE("parse_redis_url: host, port, database, IPv6 and unix sockets", "[unit][redis_client]") {
  Result<RedisAddress> plain = parse_redis_url("redis://cache.example");
  REQUIRE(plain);
  CHECK(plain->host == "cache.example");
  CHECK(plain->port == 6379);
  CHECK(plain->db == 0);
  Result<RedisAddress> full = parse_redis_url("redis://10.0.0.1:7000/3");
  REQUIRE(full);
  CHECK(full->host == "10.0.0.1");
  CHECK(full->port == 7000);
  CHECK(full->db == 3);
  Result<RedisAddress> v6 = parse_redis_url("redis://[::1]:6380");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->port == 6380);
  CHECK(parse_redis_url("redis://[::1]")->port == 6379);
  Result<RedisAddress> unix_socket = parse_redis_url("unix:///run/redis.sock?db=2");
  REQUIRE(unix_socket);
  CHECK(unix_socket->socket == "/run/redis.sock");
  CHECK(unix_socket->host.empty());
  CHECK(unix_socket->db == 2);
}

TEST_CASE("parse_redis_url: what is wrong, and the forms to give", "[unit][redis_client]") {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"http://host", "not a redis:// or unix:// address"},
      {"redis://", "no host"},
      {"redis://:6379", "no host"},
      {"redis://host:0", "bad port"},
      {"redis://host:65536", "bad port"},
      {"redis://host:-1", "bad port"},
      {"redis://host:", "bad port"},
      {"redis://host:12x", "bad port"},
      {"redis://host/x", "bad database number"},
      {"redis://host/-1", "bad database number"},
      {"unix://relative.sock", "no socket path"},
      {"unix://", "no socket path"},
      {"unix:///s.sock?db=", "bad database number"},
  };
  for (const auto& [url, why] : bad) {
    Result<RedisAddress> a = parse_redis_url(url);
    INFO(url);
    REQUIRE_FALSE(a);
    CHECK(a.why().rfind(why, 0) == 0);
    CHECK(a.why().find("give redis://HOST:PORT[/DB] or unix:///PATH") != std::string::npos);
  }
}

TEST_CASE("parse_redis_url: credentials before the host are taken as AUTH",
          "[unit][redis_client]") {
  Result<RedisAddress> a = parse_redis_url("redis://user:secret@host");
  REQUIRE(a);
  CHECK(a->host == "host");
  CHECK(a->port == 6379);
  CHECK(a->user == "user");
  CHECK(a->password == "secret");
}

TEST_CASE("get and set: bytes as they are, absent is nothing, NX and expiry",
          "[unit][redis_client]") {
  Redis redis;
  RedisClient c = redis.client();
  ServerResult<std::optional<std::string>> absent = c.get("k");
  REQUIRE(absent);
  CHECK_FALSE(*absent);
  const std::string bytes("a\0b\r\n\xff", 6);
  REQUIRE(c.set("k", bytes));
  CHECK(**c.get("k") == bytes);
  ServerResult<bool> nx = c.set("k", "other", std::nullopt, true);
  REQUIRE(nx);
  CHECK_FALSE(*nx);
  CHECK(**c.get("k") == bytes);
  CHECK(*c.set("fresh", "v", std::nullopt, true));
  // The expiry the server holds, read instead of waited out: the instant
  // it set (PEXPIRETIME, in ms on this host's clock) is the one asked for,
  // to the millisecond (not rounded to seconds), and a key set without one
  // has none.
  const auto unix_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  constexpr auto in = std::chrono::milliseconds(1h + 250ms);
  const auto before = unix_ms();
  REQUIRE(c.set("expiring", "v", in));
  const auto after = unix_ms();
  CHECK(*c.get("expiring"));
  const long long expires = std::stoll(redis.ask({"PEXPIRETIME", "expiring"}));
  CHECK(expires >= before + in.count());
  CHECK(expires <= after + in.count());
  CHECK(std::stoi(redis.ask({"PEXPIRETIME", "k"})) == -1);
}

TEST_CASE("delete_if removes a lease only while it holds our value", "[unit][redis_client]") {
  Redis redis;
  RedisClient c = redis.client();
  REQUIRE(c.set("lease", "ours"));
  REQUIRE(c.delete_if("lease", "theirs"));
  CHECK(**c.get("lease") == "ours");
  REQUIRE(c.delete_if("lease", "ours"));
  CHECK_FALSE(*c.get("lease"));
  CHECK(c.delete_if("lease", "ours"));  // already gone: nothing to do
}

TEST_CASE("the database in the address is selected; a unix socket works too",
          "[unit][redis_client]") {
  Redis redis;
  RedisClient db0 = redis.client();
  RedisClient db3 = redis.client("/3");
  REQUIRE(db3.set("k", "three"));
  CHECK_FALSE(*db0.get("k"));
  ServerResult<RedisClient> local = Redis::connect("unix://" + redis.dir / "redis.sock" + "?db=3");
  REQUIRE(local);
  CHECK(**local->get("k") == "three");
  ServerResult<RedisClient> no_db = Redis::connect(redis.url("/99999"));
  REQUIRE_FALSE(no_db);
  CHECK(no_db.why().rfind("SELECT: ", 0) == 0);
}

TEST_CASE("no server, a server gone, a server that never answers: failures, in time",
          "[unit][redis_client]") {
  ServerResult<RedisClient> none =
      Redis::connect("redis://127.0.0.1:" + std::to_string(free_port()));
  REQUIRE_FALSE(none);
  CHECK(none.why().rfind("cannot connect: ", 0) == 0);
  CHECK(none.fault() == Fault::down);

  {
    auto redis = std::make_unique<Redis>();
    RedisClient c = redis->client();
    REQUIRE(c.set("k", "v"));
    redis.reset();            // the server is stopped under the client
    CHECK_FALSE(c.get("k"));  // a failure, and no SIGPIPE ends the test
    CHECK_FALSE(c.set("k", std::string(1 << 20, 'x')));
  }

  int port = 0;
  int silent = bound_socket(port, true);
  Result<RedisAddress> address = parse_redis_url("redis://127.0.0.1:" + std::to_string(port));
  ServerResult<RedisClient> c = RedisClient::connect(*address, RedisTimeouts{500ms, 300ms});
  REQUIRE(c);  // the kernel accepts for the listening socket
  const auto start = std::chrono::steady_clock::now();
  ServerResult<std::optional<std::string>> silent_get = c->get("k");
  CHECK_FALSE(silent_get);
  CHECK(silent_get.fault() == Fault::timeout);  // typed where the wait ran out
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  ::close(silent);
}

TEST_CASE("Redis addresses: host, port, database, unix socket", "[unit][redis_client]") {
  auto a = parse_redis_url("redis://cache.internal:6380/3");
  REQUIRE(a);
  CHECK(a->host == "cache.internal");
  CHECK(a->port == 6380);
  CHECK(a->db == 3);
  auto b = parse_redis_url("redis://[::1]");
  REQUIRE(b);
  CHECK(b->host == "::1");
  CHECK(b->port == 6379);
  auto u = parse_redis_url("unix:///run/redis/redis.sock?db=2");
  REQUIRE(u);
  CHECK(u->socket == "/run/redis/redis.sock");
  CHECK(u->db == 2);
  for (const char* bad :
       {"http://h:1", "redis://", "redis://h:0", "redis://h:65536", "redis://h:12x", "redis://h/x",
        "redis://:@h:1", "unix://rel.sock", "unix:///s?db=-1"}) {
    INFO(bad);
    CHECK_FALSE(parse_redis_url(bad));
  }
}

namespace {

// The client's end of the connection `conn` accepted here: the client runs
// in this process, so its socket is found by its address.
int client_end(int conn) {
  sockaddr_in server{}, client{};
  socklen_t len = sizeof server;
  if (::getsockname(conn, reinterpret_cast<sockaddr*>(&server), &len) != 0) return -1;
  len = sizeof client;
  if (::getpeername(conn, reinterpret_cast<sockaddr*>(&client), &len) != 0) return -1;
  for (int fd = 3; fd < 4096; ++fd) {
    sockaddr_in own{}, peer{};
    socklen_t own_len = sizeof own, peer_len = sizeof peer;
    if (fd != conn && ::getsockname(fd, reinterpret_cast<sockaddr*>(&own), &own_len) == 0 &&
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0 &&
        own.sin_port == client.sin_port && peer.sin_port == server.sin_port)
      return fd;
  }
  return -1;
}

// Waits until the client has read everything sent on `conn`: acknowledged
// (nothing in the send queue), then nothing unread at its end. The client
// is in a blocking wait, so this takes a scheduling round, not a pause.
// False once the client hung up.
bool read_by_client(int conn, int client) {
  for (;;) {
    int unsent = 0, unread = 0;
    char byte = 0;
    if (::recv(conn, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) return false;
    if (::ioctl(conn, SIOCOUTQ, &unsent) != 0 || ::ioctl(client, FIONREAD, &unread) != 0)
      return false;
    if (unsent == 0 && unread == 0) return true;
    std::this_thread::yield();
  }
}

// A server that answers one request with `reply` in parts, each sent once
// the client has read the one before (so each is a read of its own), then
// `drip` bytes 'x' one at a time the same way, and then waits for the
// client to hang up.
class FakeServer {
 public:
  explicit FakeServer(std::vector<std::string> parts, std::size_t drip = 0)
      : listener_(bound_socket(port_, true)) {
    thread_ = std::thread([this, parts = std::move(parts), drip] {
      int c = ::accept(listener_, nullptr, nullptr);
      if (c < 0) return;
      const int client = client_end(c);
      char request[4096];
      (void)::read(c, request, sizeof request);
      bool reading = true;
      for (const std::string& part : parts) {
        if (::send(c, part.data(), part.size(), MSG_NOSIGNAL) < 0) break;  // the client hung up
        if (!(reading = read_by_client(c, client))) break;
      }
      for (std::size_t i = 0; reading && i < drip; ++i)
        reading = ::send(c, "x", 1, MSG_NOSIGNAL) == 1 && read_by_client(c, client);
      while (::read(c, request, sizeof request) > 0) {
      }
      ::close(c);
    });
  }
  ~FakeServer() {
    thread_.join();
    ::close(listener_);
  }
  ServerResult<std::optional<std::string>> get(RedisTimeouts timeouts = {500ms, 500ms},
                                               std::size_t max_value = kRedisMaxValue) {
    Result<RedisAddress> address = parse_redis_url("redis://127.0.0.1:" + std::to_string(port_));
    ServerResult<RedisClient> c = RedisClient::connect(*address, timeouts, max_value);
    REQUIRE(c);
    return c->get("k");  // the client hangs up as it goes
  }

 private:
  int port_ = 0;
  int listener_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("a large value is read whole into its string, and the connection stays usable",
          "[unit][redis_client]") {
  Redis redis;
  RedisClient c = redis.client();
  for (std::size_t size : {std::size_t(65536 - 8), std::size_t(65536), std::size_t((1 << 20) + 7),
                           std::size_t(3 << 20)}) {
    std::string value(size, '\0');
    for (std::size_t i = 0; i < size; ++i) value[i] = static_cast<char>(i * 131 + size);
    REQUIRE(c.set("big", value));
    ServerResult<std::optional<std::string>> got = c.get("big");
    REQUIRE(got);
    REQUIRE(*got);
    CHECK(**got == value);
    CHECK_FALSE(*c.get("absent"));  // the next replies are read in step
    REQUIRE(c.set("small", "v"));
    CHECK(**c.get("small") == "v");
  }
}

TEST_CASE("a reply that is not a whole bulk string is a failure, never a value",
          "[unit][redis_client]") {
  CHECK(**FakeServer({"$5\r\nhello\r\n"}).get() == "hello");
  CHECK(**FakeServer({"$5\r\nhel", "lo\r\n"}).get() == "hello");
  CHECK(**FakeServer({"$", "5\r\nhello\r\n"}).get() == "hello");  // hiredis reads the rest
  CHECK_FALSE(*FakeServer({"$-1\r\n"}).get());
  ServerResult<std::optional<std::string>> error =
      FakeServer({"-WRONGTYPE not a string\r\n"}).get();
  REQUIRE_FALSE(error);
  CHECK(error.why().find("WRONGTYPE") != std::string::npos);
  CHECK_FALSE(FakeServer({":5\r\n"}).get());
  CHECK_FALSE(FakeServer({"$10\r\nabc"}).get());         // cut short: the server hung up
  CHECK_FALSE(FakeServer({"$3\r\nabcXY"}).get());        // no \r\n after the value
  CHECK_FALSE(FakeServer({"$3\r\nabc\r\nmore"}).get());  // more than was asked
  CHECK_FALSE(FakeServer({"$999999999999\r\n"}).get());  // beyond Redis's 512 MiB
}

namespace {

long peak_rss_kib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("the timeout bounds the whole reply: a server that drips is cut off",
          "[unit][redis_client]") {
  // A 10 MB value one byte per read, each sent once the last was read: every
  // read is quick, the reply would take minutes.
  FakeServer server({"$10000000\r\n"}, 10'000'000);
  const auto start = std::chrono::steady_clock::now();
  ServerResult<std::optional<std::string>> got = server.get({500ms, 400ms});
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(got);
  CHECK(got.why().find("timeout") != std::string::npos);
  CHECK(took < 1500ms);
}

TEST_CASE("a value longer than the largest entry is refused from its header, unallocated",
          "[unit][redis_client]") {
  const long before = peak_rss_kib();
  const auto start = std::chrono::steady_clock::now();
  ServerResult<std::optional<std::string>> got =
      FakeServer({"$536870000\r\n"}).get({500ms, 3000ms}, std::size_t(1) << 20);
  REQUIRE_FALSE(got);
  CHECK(got.why().find("more than the 1048576 accepted") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 1500ms);  // not after the timeout
  // Within the limit, a header alone allocates nothing like its length.
  ServerResult<std::optional<std::string>> cut =
      FakeServer({"$536870000\r\nabc"}).get({500ms, 300ms});
  REQUIRE_FALSE(cut);
  CHECK(peak_rss_kib() - before < 64 * 1024);
}

TEST_CASE("an interrupt ends an exchange at once, also one held pending by a guard",
          "[unit][redis_client]") {
  int port = 0;
  int silent = bound_socket(port, true);  // accepts, never answers
  Result<RedisAddress> address = parse_redis_url("redis://127.0.0.1:" + std::to_string(port));
  ServerResult<RedisClient> c = RedisClient::connect(*address, RedisTimeouts{500ms, 10000ms});
  REQUIRE(c);
  InterruptGuard guard;  // as run_build holds them around the cache lookups
  const pthread_t self = ::pthread_self();
  // Once the request has reached the server, the client waits for the
  // reply (or is about to: the guard holds the signal pending till then).
  // The connection stays open till the end: a hang-up must not answer first.
  int conn = -1;
  std::thread interrupter([self, silent, &conn] {
    conn = ::accept(silent, nullptr, nullptr);
    char request[64];
    (void)::read(conn, request, sizeof request);
    ::pthread_kill(self, SIGINT);
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)c->get("k");
    FAIL("the get was not interrupted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::interrupted);
    CHECK(std::string(e.what()).find("signal 2") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  interrupter.join();
  ::close(conn);
  ::close(silent);
}
