// Signing and verification as one decorator (run/signed_store.hpp), over
// Redis through the RESP fake (tests/support/fake_redis.hpp) and over a
// store of another kind (no removes, no leases: HTTP's shape), the same
// layer either way: a signed round trip, a wrong key, an unsigned entry
// refused where a verify key is set.
#include "run/signed_store.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include "../support/fake_redis.hpp"
#include "../support/test_support.hpp"
#include "run/cache_key.hpp"
#include "run/remote_cache.hpp"
#include "run/remote_entry.hpp"
#include "run/storage.hpp"
#include "util/digest.hpp"

using namespace kbuild;
using namespace std::chrono_literals;
using kbuild_test::FakeRedis;

namespace signed_store_test {

// A store kept in a map, shaped as HTTP's: no removes, no leases.
class MapStore : public RemoteStore {
 public:
  explicit MapStore(std::map<std::string, std::string>& entries) : entries_(entries) {}
  ServerResult<std::optional<FetchedEntry>> get(const std::string& key) override {
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::optional<FetchedEntry>();
    return std::optional<FetchedEntry>(FetchedEntry{it->second, ""});
  }
  ServerResult<std::size_t> put(const std::string& key, const std::string& bytes) override {
    entries_[key] = bytes;
    return bytes.size();
  }
  ServerResult<bool> exists(const std::string& key) override { return entries_.count(key) > 0; }
  bool removes() const override { return false; }
  ServerStatus remove_if(const std::string&, const std::string&) override { return Done{}; }
  bool leases() const override { return false; }
  ServerResult<bool> take_lease(const std::string&, const std::string&,
                                std::chrono::milliseconds) override {
    return true;
  }
  ServerResult<bool> lease_held(const std::string&) override { return false; }
  ServerStatus release_lease(const std::string&, const std::string&) override { return Done{}; }

 private:
  std::map<std::string, std::string>& entries_;
};

// A build's remote settings with the keys given (decoded), short time-outs.
RemoteCacheSettings signed_settings(const std::string& signing_hex,
                                    const std::string& verify_hex = "") {
  RemoteCacheSettings s;
  s.url = "redis://fake:6379";
  s.from = "--remote-cache";
  s.timeouts = RedisTimeouts{100ms, 150ms};
  if (!signing_hex.empty()) {
    s.signing_key = *decode_signing_key(signing_hex, "signing key");
    s.verify_key = public_key_of(s.signing_key);
  }
  if (!verify_hex.empty()) s.verify_key = *decode_verify_key(verify_hex, "verify key");
  return s;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace signed_store_test

using namespace signed_store_test;

TEST_CASE("signed round trip: the layer signs what it writes and passes what verifies",
          "[unit][signed_store]") {
  const SigningKeys keys = generate_signing_keys();
  std::map<std::string, std::string> entries;
  SignedStore store(std::make_unique<MapStore>(entries),
                    *decode_signing_key(keys.secret_hex, "signing key"),
                    *decode_verify_key(keys.public_hex, "verify key"));
  const std::string entry = encode_remote_entry("k", "manifest", "frame");
  REQUIRE(store.put("k", entry));
  // Stored signed: the unsigned entry, then 64 bytes that verify its digest.
  const std::string& stored = entries.at("k");
  REQUIRE(stored.size() == entry.size() + kRemoteSignatureBytes);
  CHECK(stored.compare(0, entry.size(), entry) == 0);
  Result<RemoteEntry> parts = parse_remote_entry(stored);
  REQUIRE(parts);
  CHECK(signature_valid(*decode_verify_key(keys.public_hex, "verify key"),
                        std::string(parts->digest), std::string(parts->signature)));
  ServerResult<std::optional<FetchedEntry>> read = store.get("k");
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->bytes == stored);
  CHECK((*read)->refused.empty());
  // Absent: nothing, not a refusal.
  ServerResult<std::optional<FetchedEntry>> absent = store.get("other");
  REQUIRE(absent);
  CHECK_FALSE(*absent);

  // Over Redis, through the remote cache: the same layer, the same bytes.
  FakeRedis server;
  RemoteCache writer(signed_settings(keys.secret_hex), server.connector());
  REQUIRE(writer.put("k", RemoteBlob{"the manifest", "the output"}));
  const std::string in_redis = *server.value(redis_entry_name("k"));
  Result<RemoteEntry> redis_parts = parse_remote_entry(in_redis);
  REQUIRE(redis_parts);
  CHECK(redis_parts->signature.size() == kRemoteSignatureBytes);
  RemoteCache reader(signed_settings("", keys.public_hex), server.connector());
  RemoteResult<RemoteBlob> blob = reader.get("k");
  REQUIRE(blob);
  CHECK(blob->bytes == "the output");
  CHECK(reader.warning().empty());
}

TEST_CASE("signed_store: a signature from another key is refused, over Redis or another store",
          "[unit][signed_store]") {
  const SigningKeys keys = generate_signing_keys(), other = generate_signing_keys();
  std::map<std::string, std::string> entries;
  SignedStore forger(std::make_unique<MapStore>(entries),
                     *decode_signing_key(other.secret_hex, "signing key"), "");
  REQUIRE(forger.put("k", encode_remote_entry("k", "m", "evil")));
  SignedStore checker(std::make_unique<MapStore>(entries), "",
                      *decode_verify_key(keys.public_hex, "verify key"));
  ServerResult<std::optional<FetchedEntry>> read = checker.get("k");
  REQUIRE(read);
  REQUIRE(*read);
  CHECK((*read)->refused == "has a bad signature");
  // Altered as well: damaged, whoever signed it.
  entries["k"][entries["k"].size() - 100] ^= 1;
  CHECK((*checker.get("k"))->refused == "is damaged (truncated or altered)");
  // Without a verify key nothing is refused (the digest is the cache's).
  SignedStore lenient(std::make_unique<MapStore>(entries), "", "");
  CHECK((*lenient.get("k"))->refused.empty());

  // Over Redis: a miss, one warning, and the entry dropped.
  FakeRedis server;
  RemoteCache writer(signed_settings(other.secret_hex), server.connector());
  REQUIRE(writer.put("k", RemoteBlob{"m", "evil"}));
  RemoteCache reader(signed_settings("", keys.public_hex), server.connector());
  RemoteResult<RemoteBlob> forged = reader.get("k");
  REQUIRE_FALSE(forged);
  REQUIRE(forged.miss().rejected());
  CHECK(forged.miss().rejected()->problem == "has a bad signature");
  CHECK(contains(reader.warning(), "remote cache entry k has a bad signature; not used, dropped"));
  CHECK_FALSE(server.value(redis_entry_name("k")));
}

TEST_CASE("signed_store: an unsigned entry is refused when a verify key is set",
          "[unit][signed_store]") {
  const SigningKeys keys = generate_signing_keys();
  std::map<std::string, std::string> entries;
  MapStore plain(entries);
  REQUIRE(plain.put("k", encode_remote_entry("k", "m", "plain")));
  SignedStore checker(std::make_unique<MapStore>(entries), "",
                      *decode_verify_key(keys.public_hex, "verify key"));
  CHECK((*checker.get("k"))->refused == "is not signed");
  entries["junk"] = "not an entry";
  CHECK((*checker.get("junk"))->refused == "is damaged (truncated or altered)");

  FakeRedis server;
  RemoteCache unsigned_writer(signed_settings(""), server.connector());
  REQUIRE(unsigned_writer.put("k", RemoteBlob{"m", "plain"}));
  RemoteCache verifier(signed_settings("", keys.public_hex), server.connector());
  RemoteResult<RemoteBlob> plain_read = verifier.get("k");
  REQUIRE_FALSE(plain_read);
  REQUIRE(plain_read.miss().rejected());
  CHECK(plain_read.miss().rejected()->problem == "is not signed");
  CHECK(contains(verifier.warning(), "is not signed; not used, dropped"));
  CHECK(server.command_names().back() == "EVAL");  // deleted while it held what was read
  CHECK_FALSE(server.value(redis_entry_name("k")));
}

TEST_CASE("kbuild isa's blobs go through the storage stack's signed layer too",
          "[unit][signed_store]") {
  const SigningKeys keys = generate_signing_keys();
  kbuild_test::TempDir dir;
  CacheSettings cs;
  cs.enabled = true;
  cs.root = dir / "cache";
  OutputCache local = OutputCache::open(cs).cache;
  FakeRedis server;
  RemoteCache unsigned_writer(signed_settings(""), server.connector());
  StorageStack plain(&local, &unsigned_writer);
  REQUIRE(plain.top().put_blob("answers", RemoteBlob{"kbuild-isa-answers 1", "unsigned"}));
  RemoteCache verifier(signed_settings("", keys.public_hex), server.connector());
  StorageStack checked(&local, &verifier);
  RemoteResult<RemoteBlob> refused = checked.top().get_blob("answers");
  REQUIRE_FALSE(refused);
  REQUIRE(refused.miss().rejected());
  CHECK(refused.miss().rejected()->problem == "is not signed");
  CHECK(contains(verifier.warning(), "is not signed"));

  RemoteCache writer(signed_settings(keys.secret_hex), server.connector());
  StorageStack signing(&local, &writer);
  REQUIRE(signing.top().put_blob("answers", RemoteBlob{"kbuild-isa-answers 1", "signed"}));
  RemoteCache reader(signed_settings("", keys.public_hex), server.connector());
  StorageStack reading(&local, &reader);
  RemoteResult<RemoteBlob> blob = reading.top().get_blob("answers");
  REQUIRE(blob);
  CHECK(blob->manifest == "kbuild-isa-answers 1");
  CHECK(blob->bytes == "signed");
}
