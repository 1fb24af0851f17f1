// readonly_store: the one place read-only (--remote-cache-readonly,
// KBUILD_REMOTE_CACHE_READONLY) is decided: a decorator that passes reads
// to the store it wraps and answers every write itself, sending nothing: no
// upload, no lease (a builder that misses compiles at once), no damaged
// entry dropped. Callers ask writes() to skip the work of an upload.
#pragma once

#include <memory>
#include <string>

#include "run/remote_store.hpp"

namespace kbuild {

class ReadOnlyStore : public RemoteStore {
 public:
  explicit ReadOnlyStore(std::unique_ptr<RemoteStore> inner) : inner_(std::move(inner)) {}

  ServerResult<std::optional<FetchedEntry>> get(const std::string& key) override {
    return inner_->get(key);
  }
  ServerResult<bool> exists(const std::string& key) override { return inner_->exists(key); }
  ServerResult<bool> lease_held(const std::string& key) override { return inner_->lease_held(key); }

  bool writes() const override { return false; }
  ServerResult<std::size_t> put(const std::string&, const std::string&) override {
    return std::size_t{0};  // nothing sent
  }
  bool removes() const override { return false; }
  ServerStatus remove_if(const std::string&, const std::string&) override { return Done{}; }
  bool leases() const override { return false; }
  ServerResult<bool> take_lease(const std::string&, const std::string&,
                                std::chrono::milliseconds) override {
    return true;  // compile, without a lease
  }
  ServerStatus release_lease(const std::string&, const std::string&) override { return Done{}; }

 private:
  std::unique_ptr<RemoteStore> inner_;
};

}  // namespace kbuild
