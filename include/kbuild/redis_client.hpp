// A small, blocking Redis client (hiredis) for the remote cache: every
// connect and every command is bounded by a timeout, and any failure is a
// Failure the caller turns into a cache miss (never an error of the build).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "kbuild/result.hpp"

struct redisContext;

namespace kbuild {

// Where the server is: redis://[[USER]:PASSWORD@]HOST:PORT[/DB] or
// unix:///path[?db=N].
struct RedisAddress {
  std::string host;  // "" for a unix socket
  int port = 6379;
  std::string socket;
  int db = 0;
  std::string user, password;  // AUTH after connecting when a password is given
};

// The address, or a Failure saying what is wrong with `url` (which never
// quotes the password).
Result<RedisAddress> parse_redis_url(const std::string& url);

// `url` with its password replaced by "***", for messages and logs.
std::string redact_redis_url(const std::string& url);

struct RedisTimeouts {
  std::chrono::milliseconds connect{500};
  std::chrono::milliseconds operation{2000};
};

class RedisClient {
 public:
  static Result<RedisClient> connect(const RedisAddress& address, const RedisTimeouts& timeouts);

  // The value, nothing when the key is absent.
  Result<std::optional<std::string>> get(const std::string& key);
  // SET key value [PX ms] [NX]; false when NX and the key existed.
  Result<bool> set(const std::string& key, const std::string& value,
                   std::optional<std::chrono::milliseconds> expiry = std::nullopt,
                   bool only_if_absent = false);
  // Deletes `key` only while it still holds `value` (a lease we own).
  Status delete_if(const std::string& key, const std::string& value);

 private:
  struct Free {
    void operator()(redisContext* c) const;
  };
  explicit RedisClient(redisContext* c) : context_(c) {}
  std::unique_ptr<redisContext, Free> context_;
};

}  // namespace kbuild
