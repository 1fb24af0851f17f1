// The server behind the remote cache, as the remote cache uses it: an
// entry's bytes by key, and compile leases where the server can take one
// atomically. Backends: Redis (redis_store) and HTTP (http_store), each
// naming its entries itself. Decorators wrap a backend the same way,
// whichever it is: signed_store (signs what is written, refuses what fails
// the verify key) and readonly_store (never writes); remote_cache composes
// them from its settings (remote_store_layers). The entry format
// (remote_entry), its hash and compression are the remote cache's, the
// same on every backend.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kbuild/error.hpp"
#include "util/server_result.hpp"

namespace kbuild {

// An entry a store read: its bytes, and why a layer refuses them ("" when
// none does: a signature that is bad, or missing where one is required).
// A refused entry is a miss the remote cache warns about and drops (while
// the server still holds these bytes).
struct FetchedEntry {
  std::string bytes;
  std::string refused;
};

// A failure is a Faulted: its kind (down, timeout, refused, too large),
// decided by the backend where it happened, and one line saying why; the
// remote cache turns it into a miss and one warning. An interrupt during a
// wait is an Error(interrupted).
class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // The entry under `key`; nothing when there is none. An answer longer
  // than the store's limit is too_large, refused before it is allocated.
  virtual ServerResult<std::optional<FetchedEntry>> get(const std::string& key) = 0;
  // Whether put, remove_if and leases reach the server (false: a read-only
  // layer, which answers them without sending anything).
  virtual bool writes() const { return true; }
  // Stores `bytes` under `key`, replacing what was there; the bytes the
  // server was sent (a layer may add to them: the signature), for
  // `cache stats`' bytes up.
  virtual ServerResult<std::size_t> put(const std::string& key, const std::string& bytes) = 0;
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
