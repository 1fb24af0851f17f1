// Read-only decided in one place (run/readonly_store.hpp): a read-only
// remote cache, whatever the caller (a build's storage stack, a remote hit,
// a damaged entry, kbuild isa's answers, a lease), sends the server reads
// only. The RESP fake (tests/support/fake_redis.hpp) records every command.
#include "run/readonly_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/fake_redis.hpp"
#include "../support/test_support.hpp"
#include "run/cache_key.hpp"
#include "run/input_manifest.hpp"
#include "run/storage.hpp"
#include "util/digest.hpp"

using namespace kbuild;
using namespace std::chrono_literals;
using kbuild_test::FakeRedis;
using kbuild_test::TempDir;

namespace readonly_store_test {

RemoteCacheSettings readonly_settings(bool readonly, const std::string& signing_key = "") {
  RemoteCacheSettings s;
  s.url = "redis://fake:6379";
  s.from = "--remote-cache";
  s.timeouts = RedisTimeouts{100ms, 150ms};
  s.lease = 500ms;
  s.readonly = readonly;
  s.signing_key = signing_key;
  if (!signing_key.empty()) s.verify_key = public_key_of(signing_key);
  return s;
}

// A local cache, a build's output descriptor and its keys.
struct ReadOnlyScratch {
  TempDir dir;
  OutputCache cache = [this] {
    CacheSettings cs;
    cs.enabled = true;
    cs.root = dir / "cache";
    return OutputCache::open(cs).cache;
  }();
  UniqueFd out{::open((dir / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)};
  Environment env;
  EntryKey key(const std::string& shared, char local = 'a') {
    EntryKey k(CacheKey{std::string(64, local), {}},
               [shared] { return Result<std::string>(shared); });
    k.env = &env;
    return k;
  }
};

// What a build, a damaged entry and kbuild isa ask of a remote cache with
// `settings`, over `server` where "good" holds an entry, "bad" a damaged
// one and "held" another builder's lease.
void readonly_store_exercise(FakeRedis& server, const RemoteCacheSettings& settings) {
  RemoteCache writer(readonly_settings(false, settings.signing_key), server.connector());
  const std::string manifest =
      *with_replay(manifest_bytes(Manifest{}), CompilerOutput{}, std::nullopt);
  REQUIRE(writer.put("good", RemoteBlob{manifest, "the output"}));
  REQUIRE(writer.put("bad", RemoteBlob{manifest, "other output"}));
  std::string bad = *server.value(redis_entry_name("bad"));
  bad[bad.size() / 2] ^= 0x20;
  server.set_value(redis_entry_name("bad"), bad);
  server.set_value(redis_lease_name("held"), "their-token");
  const std::size_t before = server.commands().size();

  ReadOnlyScratch s;
  RemoteCache remote(settings, server.connector());
  StorageStack stack(&s.cache, &remote);
  REQUIRE_FALSE(stack.empty());
  Storage& storage = stack.top();
  // A build that misses: its get, its lease, its store and release.
  CHECK_FALSE(storage.get(s.key("new"), s.out.get()).hit);
  CHECK_FALSE(storage.lease(s.key("new"), s.out.get()).hit);
  storage.release(s.key("new"));
  // Another builder's lease: a reader does not wait for it (nor take one).
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(storage.lease(s.key("held", 'h'), s.out.get()).hit);
  if (settings.readonly) CHECK(std::chrono::steady_clock::now() - start < 400ms);
  storage.release(s.key("held", 'h'));
  // A damaged entry: a miss, kept.
  CHECK_FALSE(storage.get(s.key("bad", 'b'), s.out.get()).hit);
  // A remote hit (installed locally), then that local entry's upload.
  CHECK(storage.get(s.key("good", 'g'), s.out.get()).hit);
  RemoteStorage far(remote, s.cache);
  CHECK(far.put(s.key("good", 'g'), {s.out.get(), nullptr, {}}));
  (void)remote.store("good-again", s.cache, std::string(64, 'g'));  // what it asks of the server
  // kbuild isa's answers, through the same stack.
  CHECK(static_cast<bool>(storage.put_blob("isa", RemoteBlob{"kbuild-isa-answers 1", "answers"})) ==
        !settings.readonly);
  CHECK(static_cast<bool>(storage.get_blob("isa")) == !settings.readonly);
  CHECK(remote.take_lease("lease") == true);
  remote.release_lease("lease");
  INFO(remote.warning());
  CHECK(server.commands().size() > before);
}

}  // namespace readonly_store_test

using namespace readonly_store_test;

TEST_CASE("a read-only stack never sends a write command", "[unit][readonly_store]") {
  const std::string key = *decode_signing_key(generate_signing_keys().secret_hex, "signing key");
  for (const std::string& signing_key : {std::string(), key}) {
    FakeRedis server;
    readonly_store_exercise(server, readonly_settings(true, signing_key));
    std::vector<std::string> writes = server.write_commands();
    // The writer's two uploads are the only writes.
    CHECK(writes == std::vector<std::string>{"SET", "SET"});
    CHECK(server.value(redis_entry_name("bad")));  // kept
    CHECK_FALSE(server.value(redis_entry_name("good-again")));
    CHECK_FALSE(server.value(redis_entry_name("isa")));
    CHECK_FALSE(server.value(redis_lease_name("new")));
    CHECK(server.value(redis_lease_name("held")) == "their-token");
  }
  // The same exercise, writable, writes: the check above can fail.
  FakeRedis server;
  readonly_store_exercise(server, readonly_settings(false));
  CHECK(server.write_commands().size() > 2);
  CHECK_FALSE(server.value(redis_entry_name("bad")));  // dropped
  CHECK(server.value(redis_entry_name("isa")));
}

TEST_CASE("readonly_store answers writes itself and passes reads", "[unit][readonly_store]") {
  FakeRedis server;
  ServerResult<std::unique_ptr<RemoteStore>> backend = server.connector()(readonly_settings(true));
  REQUIRE(backend);
  server.set_value(redis_entry_name("k"), "bytes");
  ReadOnlyStore store(std::move(*backend));
  CHECK_FALSE(store.writes());
  CHECK_FALSE(store.removes());
  CHECK_FALSE(store.leases());
  REQUIRE(store.get("k"));
  CHECK((*store.get("k"))->bytes == "bytes");
  CHECK(*store.exists("k"));
  CHECK_FALSE(*store.lease_held("k"));
  CHECK(store.put("k", "other"));
  CHECK(store.remove_if("k", "bytes"));
  CHECK(*store.take_lease("k", "token", 1000ms));
  CHECK(store.release_lease("k", "token"));
  CHECK(server.value(redis_entry_name("k")) == "bytes");
  CHECK(server.write_commands().empty());
  CHECK(server.command_names() == std::vector<std::string>{"GET", "GET", "EXISTS", "GET"});
}
