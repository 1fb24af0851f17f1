// The remote cache on Redis: entries under kbuild:entry:FORMAT:KEY, leases
// under kbuild:lease:KEY (SET NX PX), a damaged entry deleted while it
// still holds what was read. Its connection is a RedisClient (which tests
// open on a socketpair to a fake server that speaks RESP).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "run/remote_store.hpp"
#include "util/redis_client.hpp"

namespace kbuild {

class RedisStore : public RemoteStore {
 public:
  explicit RedisStore(RedisClient client) : client_(std::move(client)) {}
  ServerResult<std::optional<FetchedEntry>> get(const std::string& key) override;
  ServerResult<std::size_t> put(const std::string& key, const std::string& bytes) override;
  ServerResult<bool> exists(const std::string& key) override;
  bool removes() const override { return true; }
  ServerStatus remove_if(const std::string& key, const std::string& bytes) override;
  bool leases() const override { return true; }
  ServerResult<bool> take_lease(const std::string& key, const std::string& token,
                                std::chrono::milliseconds expiry) override;
  ServerResult<bool> lease_held(const std::string& key) override;
  ServerStatus release_lease(const std::string& key, const std::string& token) override;

 private:
  RedisClient client_;
};

}  // namespace kbuild
