// The remote cache on Redis without a redis-server: RedisStore over a
// RedisClient opened on a socketpair to FakeRedis (tests/support), which
// speaks RESP. The lease, signature, damaged-entry and dead or slow server
// paths; and how a failure's kind reaches a build's lookup (typed by the
// store where it happened, never read from its message).
#include "run/redis_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "../support/fake_redis.hpp"
#include "../support/test_support.hpp"
#include "kbuild/environment.hpp"
#include "run/cache_key.hpp"
#include "run/input_manifest.hpp"
#include "run/remote_cache.hpp"
#include "run/storage.hpp"
#include "util/digest.hpp"

using namespace kbuild;
using namespace std::chrono_literals;
using kbuild_test::FakeRedis;
using kbuild_test::read_file;
using kbuild_test::TempDir;

namespace redis_store_test {

// Settings as a build's, with short time-outs set here.
RemoteCacheSettings settings(const std::string& signing_hex = "",
                             const std::string& verify_hex = "") {
  RemoteCacheSettings s;
  s.url = "redis://fake:6379";
  s.from = "--remote-cache";
  s.timeouts = RedisTimeouts{100ms, 150ms};
  s.lease = 2000ms;
  if (!signing_hex.empty()) {
    s.signing_key = *decode_signing_key(signing_hex, "signing key");
    s.verify_key = public_key_of(s.signing_key);
  }
  if (!verify_hex.empty()) s.verify_key = *decode_verify_key(verify_hex, "verify key");
  return s;
}

// A RemoteCache whose connections go to `server`.
RemoteStoreConnector connector(FakeRedis& server) {
  return server.connector();
}

// A store that fails every exchange as scripted (the kind and the message
// chosen apart).
class ScriptedStore : public RemoteStore {
 public:
  explicit ScriptedStore(Faulted faulted) : faulted_(std::move(faulted)) {}
  ServerResult<std::optional<FetchedEntry>> get(const std::string&) override { return faulted_; }
  ServerResult<std::size_t> put(const std::string&, const std::string&) override {
    return faulted_;
  }
  ServerResult<bool> exists(const std::string&) override { return faulted_; }
  bool removes() const override { return true; }
  ServerStatus remove_if(const std::string&, const std::string&) override { return faulted_; }
  bool leases() const override { return true; }
  ServerResult<bool> take_lease(const std::string&, const std::string&,
                                std::chrono::milliseconds) override {
    return faulted_;
  }
  ServerResult<bool> lease_held(const std::string&) override { return faulted_; }
  ServerStatus release_lease(const std::string&, const std::string&) override { return faulted_; }

 private:
  Faulted faulted_;
};

// A local cache and a build's output descriptor, for lookups through the
// storage stack.
struct Local {
  TempDir dir;
  OutputCache cache = [this] {
    CacheSettings cs;
    cs.enabled = true;
    cs.root = dir / "cache";
    return OutputCache::open(cs).cache;
  }();
  UniqueFd out{::open((dir / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)};
  Environment env;
  EntryKey key(const std::string& shared) {
    EntryKey k(CacheKey{std::string(64, 'a'), {}},
               [shared] { return Result<std::string>(shared); });
    k.env = &env;
    return k;
  }
  std::string output() const { return read_file(dir / "out"); }
};

// A manifest a reader accepts: nothing read, nothing printed.
std::string empty_manifest() {
  return *with_replay(manifest_bytes(Manifest{}), CompilerOutput{}, std::nullopt);
}

bool has_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace redis_store_test

using namespace redis_store_test;

TEST_CASE("a failure's kind is the store's, whatever its message says", "[unit][redis_store]") {
  Local local;
  REQUIRE(local.cache.enabled());
  auto lookup = [&local](Faulted faulted) {
    RemoteCache remote(settings(), [faulted](const RemoteCacheSettings&) {
      return ServerResult<std::unique_ptr<RemoteStore>>(std::make_unique<ScriptedStore>(faulted));
    });
    RemoteStorage storage(remote, local.cache);
    return storage.get(local.key("k"), local.out.get());
  };
  // A time-out worded without the word, and a server down whose message
  // names a timeout: the kind decides, not the text.
  Lookup slow = lookup({Fault::timeout, "GET: the server took its time"});
  CHECK_FALSE(slow.hit);
  CHECK(slow.miss == Miss::timeout);
  CHECK(slow.why == "GET: the server took its time");
  Lookup down = lookup({Fault::down, "GET: connection reset (its timeout setting is 5s)"});
  CHECK(down.miss == Miss::down);
  CHECK(lookup({Fault::refused, "GET: NOAUTH"}).miss == Miss::down);
  // A connection that cannot be made is typed by the connector too.
  RemoteCache unreachable(settings(), [](const RemoteCacheSettings&) {
    return ServerResult<std::unique_ptr<RemoteStore>>(
        Faulted{Fault::timeout, "cannot connect: no SYN-ACK"});
  });
  RemoteStorage storage(unreachable, local.cache);
  CHECK(storage.get(local.key("k"), local.out.get()).miss == Miss::timeout);
}

// The shared key's failure is the miss's reason (issue 44: it said only
// "an input cannot be read" before).
TEST_CASE("without a shared key the remote is not asked, and the miss says why",
          "[unit][redis_store]") {
  Local local;
  FakeRedis server;
  RemoteCache remote(settings(), connector(server));
  RemoteStorage storage(remote, local.cache);
  EntryKey key(CacheKey{std::string(64, 'a'), {}},
               [] { return Result<std::string>(Failure{"/opt/cc/g++ cannot be read"}); });
  key.env = &local.env;
  Lookup found = storage.get(key, local.out.get());
  CHECK_FALSE(found.hit);
  CHECK(found.miss == Miss::missing);
  CHECK(found.why == "no remote key: /opt/cc/g++ cannot be read");
  CHECK(server.commands().empty());
}

TEST_CASE("a server that never answers is a timeout, in time, and asked nothing more",
          "[unit][redis_store]") {
  FakeRedis server;
  server.behave(FakeRedis::Behaviour::hang);
  Local local;
  RemoteCache remote(settings(), connector(server));
  RemoteStorage storage(remote, local.cache);
  const auto start = std::chrono::steady_clock::now();
  Lookup found = storage.get(local.key("k"), local.out.get());
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK_FALSE(found.hit);
  CHECK(found.miss == Miss::timeout);
  REQUIRE(remote.failed());
  CHECK(remote.failed()->fault == Fault::timeout);
  CHECK(has_text(remote.warning(), "building without it"));
  // One timeout per build: the lease and the upload never reach the server.
  CHECK(storage.lease(local.key("k"), local.out.get()).miss == Miss::timeout);
  CHECK(server.commands().size() == 1);

  // The client alone says the same.
  FakeRedis silent;
  silent.behave(FakeRedis::Behaviour::hang);
  ServerResult<RedisClient> client =
      RedisClient::open(silent.connect(), RedisAddress{}, RedisTimeouts{100ms, 100ms});
  REQUIRE(client);
  ServerResult<std::optional<std::string>> got = client->get("k");
  REQUIRE_FALSE(got);
  CHECK(got.fault() == Fault::timeout);
}

TEST_CASE("a server that closes the connection is down: a miss and one warning",
          "[unit][redis_store]") {
  FakeRedis server;
  server.behave(FakeRedis::Behaviour::close);
  Local local;
  RemoteCache remote(settings(), connector(server));
  RemoteStorage storage(remote, local.cache);
  Lookup found = storage.get(local.key("k"), local.out.get());
  CHECK(found.miss == Miss::down);
  REQUIRE(remote.failed());
  CHECK(remote.failed()->fault == Fault::down);
  CHECK(has_text(found.why, "the server closed the connection"));
  CHECK(has_text(remote.warning(), "remote cache redis://fake:6379: GET: "));
  CHECK(has_text(remote.warning(), "drop --remote-cache"));
  // Nothing more is asked of it: a put answers why it stored nothing.
  Status put = remote.put("k", RemoteBlob{"m", "bytes"});
  REQUIRE_FALSE(put);
  CHECK(has_text(put.why(), "the remote cache failed this build: GET: "));
  // A get answers the failure too, typed as the store typed it.
  RemoteResult<RemoteBlob> got = remote.get("k");
  REQUIRE_FALSE(got);
  REQUIRE(got.miss().failed());
  CHECK(got.miss().failed()->fault == Fault::down);
  CHECK(server.commands().size() == 1);
  bool counted = false;
  for (const auto& [name, count] : remote.take_counters())
    if (name == "remote_errors") counted = count == 1;
  CHECK(counted);
}

TEST_CASE("a server that refuses a write (full) is refused: the build goes on without it",
          "[unit][redis_store]") {
  FakeRedis server;
  RemoteCache remote(settings(), connector(server));
  server.behave(FakeRedis::Behaviour::refuse);
  Status put = remote.put("k", RemoteBlob{"m", "bytes"});
  REQUIRE_FALSE(put);
  CHECK(has_text(put.why(), "SET: OOM command not allowed"));
  REQUIRE(remote.failed());
  CHECK(remote.failed()->fault == Fault::refused);
  CHECK(has_text(remote.failed()->why, "SET: OOM command not allowed"));
  CHECK(server.values().empty());
}

TEST_CASE("entries are stored under the format's name, signed, and read back whole",
          "[unit][redis_store]") {
  FakeRedis server;
  const SigningKeys keys = generate_signing_keys();
  RemoteCache writer(settings(keys.secret_hex), connector(server));
  REQUIRE(writer.put("k1", RemoteBlob{"the manifest", std::string("out\0put", 7)}));
  REQUIRE(writer.warning().empty());
  CHECK(server.values().count(redis_entry_name("k1")) == 1);
  CHECK(redis_entry_name("k1") == "kbuild:entry:4:k1");

  RemoteCache reader(settings("", keys.public_hex), connector(server));
  RemoteResult<RemoteBlob> blob = reader.get("k1");
  REQUIRE(blob);
  CHECK(blob->manifest == "the manifest");
  CHECK(blob->bytes == std::string("out\0put", 7));
  RemoteResult<RemoteBlob> other = reader.get("other");  // absent: a plain miss, no warning
  REQUIRE_FALSE(other);
  CHECK(std::holds_alternative<RemoteAbsent>(other.miss().reason));
  CHECK(other.miss().why() == "remote key other: no usable entry");
  CHECK(reader.warning().empty());
}

TEST_CASE("a signature from another key, or none, is refused and the entry dropped",
          "[unit][redis_store]") {
  FakeRedis server;
  const SigningKeys keys = generate_signing_keys(), other = generate_signing_keys();
  RemoteCache forger(settings(other.secret_hex), connector(server));
  REQUIRE(forger.put("k", RemoteBlob{"m", "evil"}));
  // A writer (it holds the signing key) reads with its own public key.
  RemoteCache reader(settings(keys.secret_hex), connector(server));
  RemoteResult<RemoteBlob> forged = reader.get("k");
  REQUIRE_FALSE(forged);
  REQUIRE(forged.miss().rejected());
  CHECK(forged.miss().rejected()->problem == "has a bad signature");
  CHECK(has_text(reader.warning(), "remote cache entry k has a bad signature; not used, dropped"));
  CHECK_FALSE(server.value(redis_entry_name("k")));  // deleted while it held what was read
  CHECK(server.command_names().back() == "EVAL");

  RemoteCache unsigned_writer(settings(), connector(server));
  REQUIRE(unsigned_writer.put("k", RemoteBlob{"m", "plain"}));
  RemoteCache verifier(settings("", keys.public_hex), connector(server));
  RemoteResult<RemoteBlob> plain = verifier.get("k");
  REQUIRE_FALSE(plain);
  REQUIRE(plain.miss().rejected());
  CHECK(plain.miss().rejected()->problem == "is not signed");
  CHECK(has_text(verifier.warning(), "is not signed; not used, dropped"));
}

TEST_CASE("a damaged entry is a miss: dropped by a writer, kept by a read-only reader",
          "[unit][redis_store]") {
  FakeRedis server;
  RemoteCache writer(settings(), connector(server));
  REQUIRE(writer.put("k", RemoteBlob{"m", "output bytes"}));
  std::string bytes = *server.value(redis_entry_name("k"));
  bytes[bytes.size() - 40] ^= 0x20;  // in the frame or the digest
  server.set_value(redis_entry_name("k"), bytes);

  Local local;
  RemoteCacheSettings readonly_settings = settings();
  readonly_settings.readonly = true;
  RemoteCache readonly(readonly_settings, connector(server));
  RemoteStorage readonly_storage(readonly, local.cache);
  Lookup found = readonly_storage.get(local.key("k"), local.out.get());
  CHECK(found.miss == Miss::damaged);
  CHECK(has_text(readonly.warning(), "is damaged (truncated or altered); not used"));
  CHECK_FALSE(has_text(readonly.warning(), "dropped"));
  CHECK(server.value(redis_entry_name("k")) == bytes);

  RemoteCache reader(settings(), connector(server));
  RemoteStorage storage(reader, local.cache);
  CHECK(storage.get(local.key("k"), local.out.get()).miss == Miss::damaged);
  CHECK(has_text(reader.warning(), "is damaged (truncated or altered); not used, dropped"));
  CHECK_FALSE(server.value(redis_entry_name("k")));
}

TEST_CASE("a remote hit writes the output and installs the entry in the local cache",
          "[unit][redis_store]") {
  FakeRedis server;
  RemoteCache writer(settings(), connector(server));
  REQUIRE(writer.put("k", RemoteBlob{empty_manifest(), "the output"}));
  Local local;
  RemoteCache reader(settings(), connector(server));
  RemoteStorage storage(reader, local.cache);
  Lookup found = storage.get(local.key("k"), local.out.get());
  REQUIRE(found.hit);
  CHECK(found.remote);
  CHECK(local.output() == "the output");
  CHECK(reader.warning().empty());
}

TEST_CASE("leases: one builder takes the key, another waits for its entry; only ours is released",
          "[unit][redis_store]") {
  FakeRedis server;
  Local local;
  RemoteCache first(settings(), connector(server)), second(settings(), connector(server));
  REQUIRE(first.take_lease("k"));
  const std::optional<std::string> token = server.value(redis_lease_name("k"));
  REQUIRE(token);
  // SET kbuild:lease:k TOKEN PX <lease> NX: it expires by itself.
  CHECK(server.commands().back() ==
        FakeRedis::Command{"SET", redis_lease_name("k"), *token, "PX", "2000", "NX"});
  CHECK_FALSE(second.take_lease("k"));

  first.release_lease("k");
  CHECK_FALSE(server.value(redis_lease_name("k")));
  // Free again: the next builder takes it (a miss: it compiles).
  RemoteStorage taking(second, local.cache);
  CHECK(taking.lease(local.key("k"), local.out.get()).miss == Miss::missing);
  CHECK(server.value(redis_lease_name("k")));
  taking.release(local.key("k"));
  CHECK_FALSE(server.value(redis_lease_name("k")));

  // Another builder holds the lease on "w"; its entry arrives while we
  // wait, and its lease goes.
  REQUIRE(first.put("w", RemoteBlob{empty_manifest(), "built by another"}));
  const std::string entry = *server.value(redis_entry_name("w"));
  server.erase(redis_entry_name("w"));
  server.set_value(redis_lease_name("w"), "their-token");
  int polls = 0;
  server.on_command([&polls, &entry](const FakeRedis::Command& c, FakeRedis& s) {
    if (c[0] == "EXISTS" && ++polls == 2) {
      s.set_value(redis_entry_name("w"), entry);
      s.erase(redis_lease_name("w"));
    }
  });
  RemoteCache third(settings(), connector(server));
  RemoteStorage waiting(third, local.cache);
  Lookup waited = waiting.lease(local.key("w"), local.out.get());
  CHECK(waited.hit);
  CHECK(polls == 2);
  CHECK(local.output() == "built by another");

  // A lease that ends without an entry (its builder died): a miss, compile.
  server.on_command(nullptr);
  server.set_value(redis_lease_name("dead"), "their-token");
  server.on_command([](const FakeRedis::Command& c, FakeRedis& s) {
    if (c[0] == "EXISTS") s.erase(redis_lease_name("dead"));
  });
  RemoteCache fourth(settings(), connector(server));
  RemoteStorage orphan(fourth, local.cache);
  Lookup ended = orphan.lease(local.key("dead"), local.out.get());
  CHECK_FALSE(ended.hit);
  CHECK(ended.miss == Miss::missing);
  server.on_command(nullptr);

  // Release is compare-and-delete: a lease someone else took after ours
  // expired stays.
  REQUIRE(first.take_lease("mine"));
  server.set_value(redis_lease_name("mine"), "someone-else");
  first.release_lease("mine");
  CHECK(server.value(redis_lease_name("mine")) == "someone-else");
}

TEST_CASE("a read-only cache takes no lease and uploads nothing", "[unit][redis_store]") {
  FakeRedis server;
  RemoteCacheSettings s = settings();
  s.readonly = true;
  RemoteCache readonly(s, connector(server));
  CHECK(readonly.take_lease("k"));  // compile, without a lease
  Status put = readonly.put("k", RemoteBlob{"m", "bytes"});
  REQUIRE_FALSE(put);
  CHECK(put.why() == "the remote cache is read-only");
  CHECK(server.values().empty());
  for (const std::string& name : server.command_names()) CHECK(name != "SET");
}

TEST_CASE("a wait for another builder's lease says so when it starts, and again when long",
          "[unit][redis_store]") {
  FakeRedis server;
  Local local;
  server.set_value(redis_lease_name("w"), "their-token");
  RemoteCacheSettings s = settings();
  s.lease = 2000ms;
  s.long_wait = 50ms;
  RemoteCache remote(s, connector(server));
  std::mutex said_mutex;
  std::vector<WaitNotice> said;
  remote.on_wait([&said, &said_mutex](const WaitNotice& notice) {
    std::lock_guard<std::mutex> lock(said_mutex);
    said.push_back(notice);
  });
  auto said_now = [&said, &said_mutex] {
    std::lock_guard<std::mutex> lock(said_mutex);
    return said;
  };
  // At the wait's first poll its start was already said; once the long
  // note is out, the holder's lease ends without an entry.
  std::vector<WaitNotice> at_first_poll;
  server.on_command([&](const FakeRedis::Command& c, FakeRedis& redis) {
    if (c[0] != "EXISTS") return;
    if (at_first_poll.empty()) at_first_poll = said_now();
    if (said_now().size() == 2) redis.erase(redis_lease_name("w"));
  });
  RemoteStorage storage(remote, local.cache);
  Lookup waited = storage.lease(local.key("w"), local.out.get());
  server.on_command(nullptr);
  CHECK_FALSE(waited.hit);
  REQUIRE(at_first_poll.size() == 1);
  CHECK_FALSE(at_first_poll[0].long_wait);
  CHECK(at_first_poll[0].line == "waiting for another builder's compile (remote key w, up to 2 s)");
  const std::vector<WaitNotice> all = said_now();
  REQUIRE(all.size() == 2);
  CHECK(all[1].long_wait);
  CHECK(has_text(all[1].line, "still waiting for another builder's compile (remote key w): "));
  CHECK(has_text(all[1].line, "at most 2 s, then this build compiles it itself"));

  // A lease taken at once is no wait: nothing is said.
  said.clear();
  RemoteStorage taking(remote, local.cache);
  CHECK_FALSE(taking.lease(local.key("free"), local.out.get()).hit);
  taking.release(local.key("free"));
  CHECK(said_now().empty());
}

TEST_CASE("fetch answers why it missed: absent, stale input, rejected, the server failed",
          "[unit][redis_store]") {
  FakeRedis server;
  Local local;
  RemoteCache writer(settings(), connector(server));
  RemoteCache reader(settings(), connector(server));

  RemoteResult<std::string> absent =
      reader.fetch("none", local.cache, std::string(64, 'a'), local.env, local.out.get());
  REQUIRE_FALSE(absent);
  CHECK(std::holds_alternative<RemoteAbsent>(absent.miss().reason));
  CHECK(absent.miss().why() == "remote key none: no usable entry");

  // Built where a variable the compiler read had a value it has not here.
  Manifest read_variable;
  read_variable.variables.push_back(
      {read_variable.keep("REDIS_STORE_TEST_VARIABLE"), read_variable.keep("1")});
  REQUIRE(writer.put("stale", RemoteBlob{*with_replay(manifest_bytes(read_variable),
                                                      CompilerOutput{}, std::nullopt),
                                         "the output"}));
  RemoteResult<std::string> stale =
      reader.fetch("stale", local.cache, std::string(64, 'b'), local.env, local.out.get());
  REQUIRE_FALSE(stale);
  REQUIRE(stale.miss().stale());
  CHECK(stale.miss().stale()->kind == StaleKind::variable_differs);
  CHECK(stale.miss().stale()->what == "REDIS_STORE_TEST_VARIABLE");
  CHECK(has_text(stale.miss().why(),
                 "remote key stale: its entry was built from files that differ here ("));

  REQUIRE(writer.put("damaged", RemoteBlob{empty_manifest(), "the output"}));
  std::string bytes = *server.value(redis_entry_name("damaged"));
  bytes[bytes.size() - 40] ^= 0x20;
  server.set_value(redis_entry_name("damaged"), bytes);
  RemoteResult<std::string> damaged =
      reader.fetch("damaged", local.cache, std::string(64, 'c'), local.env, local.out.get());
  REQUIRE_FALSE(damaged);
  REQUIRE(damaged.miss().rejected());
  CHECK(damaged.miss().rejected()->problem == "is damaged (truncated or altered)");
  CHECK(damaged.miss().why() == "remote key damaged: no usable entry");

  REQUIRE(writer.put("whole", RemoteBlob{empty_manifest(), "the output"}));
  RemoteResult<std::string> hit =
      reader.fetch("whole", local.cache, std::string(64, 'd'), local.env, local.out.get());
  REQUIRE(hit);
  CHECK(read_manifest(*hit));
  CHECK(local.output() == "the output");

  server.behave(FakeRedis::Behaviour::close);
  RemoteResult<std::string> failed =
      reader.fetch("whole", local.cache, std::string(64, 'e'), local.env, local.out.get());
  REQUIRE_FALSE(failed);
  REQUIRE(failed.miss().failed());
  CHECK(failed.miss().failed()->fault == Fault::down);
  CHECK(failed.miss().why() == reader.failed()->why);
}
