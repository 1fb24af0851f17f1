// The server behind the remote cache, as the remote cache uses it: an
// entry's bytes by key, and compile leases where the server can take one
// atomically. Backends: Redis (redis_store) and HTTP (http_store), each
// naming its entries itself. The entry format, its hash, signature and
// compression are the remote cache's, the same on every backend.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kbuild/error.hpp"
#include "util/server_result.hpp"

namespace kbuild {

// A failure is a Faulted: its kind (down, timeout, refused, too large),
// decided by the backend where it happened, and one line saying why; the
// remote cache turns it into a miss and one warning. An interrupt during a
// wait is an Error(interrupted).
class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // The entry under `key`; nothing when there is none. An answer longer
  // than the store's limit is too_large, refused before it is allocated.
  virtual ServerResult<std::optional<std::string>> get(const std::string& key) = 0;
  // Stores `bytes` under `key`, replacing what was there.
  virtual ServerStatus put(const std::string& key, const std::string& bytes) = 0;
  // Whether an entry is stored under `key`, without reading it.
  virtual ServerResult<bool> exists(const std::string& key) = 0;
  // Removes the entry under `key` while it still holds `bytes` (a damaged
  // one); false when the store cannot remove entries.
  virtual bool removes() const = 0;
  virtual ServerStatus remove_if(const std::string& key, const std::string& bytes) = 0;

  // Whether the store takes leases (an atomic set-if-absent with expiry);
  // without them every builder that misses compiles.
  virtual bool leases() const = 0;
  // Takes the lease on `key` for `token`: false when another holds it.
  virtual ServerResult<bool> take_lease(const std::string& key, const std::string& token,
                                        std::chrono::milliseconds expiry) = 0;
  // Whether anyone holds the lease on `key`.
  virtual ServerResult<bool> lease_held(const std::string& key) = 0;
  // Gives up the lease on `key` while `token` still holds it.
  virtual ServerStatus release_lease(const std::string& key, const std::string& token) = 0;
};

}  // namespace kbuild
