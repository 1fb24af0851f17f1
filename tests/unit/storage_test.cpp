// The storage decorators (run/storage.hpp) over scripted backends: which
// layer a multilevel lookup, lease and store reach (read-only is the remote
// store's layer: readonly_store_test.cpp).
#include "run/storage.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/mock_storage.hpp"
#include "../support/test_support.hpp"
#include "util/file_system.hpp"

using namespace kbuild;
using kbuild_test::MockStorage;
using kbuild_test::read_file;
using kbuild_test::TempDir;

namespace {

struct StorageScratch {
  TempDir dir;
  UniqueFd fd{::open((dir / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)};
  std::string bytes() const { return read_file(dir / "out"); }
};

EntryKey key_of(const std::string& hex) {
  return EntryKey(CacheKey{hex, {}}, [hex] { return Result<std::string>("shared-" + hex); });
}

}  // namespace

TEST_CASE("multilevel: near first, then far; a lease is far's; a store goes near, then far",
          "[unit][storage]") {
  MockStorage near, far;
  MultilevelStorage both(near, far);
  StorageScratch s;
  REQUIRE(s.fd.valid());
  far.entries["k"] = "from far";
  Lookup found = both.get(key_of("k"), s.fd.get());
  CHECK(found.hit);
  CHECK(s.bytes() == "from far");
  CHECK(near.calls == std::vector<std::string>{"get"});
  CHECK(far.calls == std::vector<std::string>{"get"});
  near.entries["k"] = "from near";
  near.calls.clear(), far.calls.clear();
  CHECK(both.get(key_of("k"), s.fd.get()).hit);
  CHECK(s.bytes() == "from near");
  CHECK(far.calls.empty());

  CHECK_FALSE(both.lease(key_of("new"), s.fd.get()).hit);
  both.release(key_of("new"));
  CHECK(near.calls == std::vector<std::string>{"get"});
  CHECK(far.calls == std::vector<std::string>{"lease", "release"});

  ::ftruncate(s.fd.get(), 0);
  ::pwrite(s.fd.get(), "built", 5, 0);
  KeyInput input;
  CHECK(both.put(key_of("new"), {s.fd.get(), &input, {}}));
  CHECK(near.entries.at("new") == "built");
  CHECK(far.entries.at("new") == "built");
  // Near refuses (an input changed during the build): far gets nothing.
  near.refuse_put = "h.h changed during the build";
  Status refused = both.put(key_of("other"), {s.fd.get(), &input, {}});
  CHECK(refused.why() == "h.h changed during the build");
  CHECK(far.entries.count("other") == 0);
}

TEST_CASE("multilevel: a far layer that is down is a miss with its reason, not an error",
          "[unit][storage]") {
  MockStorage near, far;
  MultilevelStorage both(near, far);
  StorageScratch s;
  far.fail_get = Miss::down;
  Lookup found = both.get(key_of("k"), s.fd.get());
  CHECK_FALSE(found.hit);
  CHECK(found.miss == Miss::down);
  CHECK(std::string(miss_name(found.miss)) == "down");
}

TEST_CASE("the stack a build's settings compose: none without a cache, local alone, or both",
          "[unit][storage]") {
  TempDir dir;
  CHECK(StorageStack(nullptr, nullptr).empty());
  CacheSettings off;
  OutputCache disabled = OutputCache::open(off).cache;
  CHECK(StorageStack(&disabled, nullptr).empty());
  CacheSettings cs;
  cs.enabled = true;
  cs.root = dir / "cache";
  OutputCache cache = OutputCache::open(cs).cache;
  REQUIRE(cache.enabled());
  RemoteCache none{RemoteCacheSettings{}};
  StorageStack local(&cache, &none);
  REQUIRE_FALSE(local.empty());
  CHECK(dynamic_cast<LocalStorage*>(&local.top()) != nullptr);
  RemoteCacheSettings rs;
  rs.url = "redis://127.0.0.1:1";
  RemoteCache remote(rs);
  StorageStack both(&cache, &remote);
  CHECK(dynamic_cast<MultilevelStorage*>(&both.top()) != nullptr);
}

TEST_CASE("the shared key is made once, when a backend first asks for it", "[unit][storage]") {
  int made = 0;
  EntryKey key(CacheKey{"k", {}}, [&made] {
    ++made;
    return Result<std::string>("shared-k");
  });
  CHECK(made == 0);  // a local hit would never ask
  CHECK(*key.shared() == "shared-k");
  CHECK(*key.shared() == "shared-k");
  CHECK(made == 1);
  EntryKey local_only(CacheKey{"k", {}});
  CHECK_FALSE(local_only.shared());
  CHECK(local_only.shared().why() == "no remote cache");
}
