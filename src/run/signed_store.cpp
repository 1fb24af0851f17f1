#include "run/signed_store.hpp"

#include "run/remote_entry.hpp"
#include "util/digest.hpp"

namespace kbuild {

std::string SignedStore::refusal(const std::string& key, const std::string& bytes) const {
  if (verify_key_.empty()) return "";
  Result<RemoteEntry> entry = parse_remote_entry(bytes);
  if (!entry) return "is damaged (truncated or altered)";
  if (entry->signature.empty()) return "is not signed";
  if (signature_valid(verify_key_, std::string(entry->digest), std::string(entry->signature)))
    return "";  // the digest it vouches for is the remote cache's to check
  // Altered bytes are said to be damaged, whoever signed them.
  return remote_digest_holds(key, *entry) ? "has a bad signature"
                                          : "is damaged (truncated or altered)";
}

ServerResult<std::optional<FetchedEntry>> SignedStore::get(const std::string& key) {
  ServerResult<std::optional<FetchedEntry>> fetched = inner_->get(key);
  if (fetched && *fetched && (*fetched)->refused.empty())
    (*fetched)->refused = refusal(key, (*fetched)->bytes);
  return fetched;
}

ServerResult<std::size_t> SignedStore::put(const std::string& key, const std::string& bytes) {
  if (signing_key_.empty()) return inner_->put(key, bytes);
  Result<RemoteEntry> entry = parse_remote_entry(bytes);
  // Only a whole unsigned entry is signed: anything else is a caller's bug,
  // stored as it is (a reader with the verify key refuses it).
  if (!entry || !entry->signature.empty()) return inner_->put(key, bytes);
  return inner_->put(key, bytes + sign_message(signing_key_, std::string(entry->digest)));
}

}  // namespace kbuild
