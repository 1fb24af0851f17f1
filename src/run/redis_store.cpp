#include "run/redis_store.hpp"

#include "run/cache_key.hpp"

namespace kbuild {

ServerResult<std::optional<FetchedEntry>> RedisStore::get(const std::string& key) {
  ServerResult<std::optional<std::string>> value = client_.get(redis_entry_name(key));
  if (!value) return value.faulted();
  if (!*value) return std::optional<FetchedEntry>();
  return std::optional<FetchedEntry>(FetchedEntry{std::move(**value), ""});
}

ServerResult<std::size_t> RedisStore::put(const std::string& key, const std::string& bytes) {
  ServerResult<bool> set = client_.set(redis_entry_name(key), bytes);
  if (!set) return set.faulted();
  return bytes.size();
}

ServerResult<bool> RedisStore::exists(const std::string& key) {
  return client_.exists(redis_entry_name(key));
}

ServerStatus RedisStore::remove_if(const std::string& key, const std::string& bytes) {
  return client_.delete_if(redis_entry_name(key), bytes);
}

ServerResult<bool> RedisStore::take_lease(const std::string& key, const std::string& token,
                                          std::chrono::milliseconds expiry) {
  return client_.set(redis_lease_name(key), token, expiry, true);
}

ServerResult<bool> RedisStore::lease_held(const std::string& key) {
  ServerResult<std::optional<std::string>> holder = client_.get(redis_lease_name(key));
  if (!holder) return holder.faulted();
  return holder->has_value();
}

ServerStatus RedisStore::release_lease(const std::string& key, const std::string& token) {
  return client_.delete_if(redis_lease_name(key), token);
}

}  // namespace kbuild
