// signed_store: signing and verification of remote cache entries, as one
// decorator that wraps any backend (Redis, HTTP) the same way. Entries
// written through it carry an Ed25519 signature of their digest
// (remote_entry); with a verify key, an entry read without one, or with one
// the key does not verify, is refused (a miss the remote cache warns about
// and drops). The digest itself, what the signature vouches for, is the
// remote cache's to check.
#pragma once

#include <memory>
#include <string>

#include "run/remote_store.hpp"

namespace kbuild {

class SignedStore : public RemoteStore {
 public:
  // `signing_key`: the decoded seed ("": entries are written unsigned);
  // `verify_key`: the decoded public key ("": signatures are not required).
  SignedStore(std::unique_ptr<RemoteStore> inner, std::string signing_key, std::string verify_key)
      : inner_(std::move(inner)),
        signing_key_(std::move(signing_key)),
        verify_key_(std::move(verify_key)) {}

  ServerResult<std::optional<FetchedEntry>> get(const std::string& key) override;
  // `bytes`: an unsigned entry (remote_entry), signed here with a signing key.
  ServerResult<std::size_t> put(const std::string& key, const std::string& bytes) override;
  ServerResult<bool> exists(const std::string& key) override { return inner_->exists(key); }
  bool writes() const override { return inner_->writes(); }
  bool removes() const override { return inner_->removes(); }
  ServerStatus remove_if(const std::string& key, const std::string& bytes) override {
    return inner_->remove_if(key, bytes);
  }
  bool leases() const override { return inner_->leases(); }
  ServerResult<bool> take_lease(const std::string& key, const std::string& token,
                                std::chrono::milliseconds expiry) override {
    return inner_->take_lease(key, token, expiry);
  }
  ServerResult<bool> lease_held(const std::string& key) override { return inner_->lease_held(key); }
  ServerStatus release_lease(const std::string& key, const std::string& token) override {
    return inner_->release_lease(key, token);
  }

  // Why `bytes` read under `key` cannot be used with the verify key ("" when
  // they can): not an entry, not signed, altered, or signed by another key.
  std::string refusal(const std::string& key, const std::string& bytes) const;

 private:
  std::unique_ptr<RemoteStore> inner_;
  std::string signing_key_, verify_key_;
};

}  // namespace kbuild
