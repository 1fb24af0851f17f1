// A small Redis client for the remote cache: hiredis formats commands and
// parses replies; the socket is kbuild's own, so each exchange (send and
// the whole reply) has one deadline and an interrupt ends it. Any failure is
// a Faulted (down, timeout, refused, too large: server_result.hpp) the caller
// turns into a cache miss (never an error of the build); an interrupt is an
// Error(interrupted).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/error.hpp"
#include "util/server_result.hpp"
#include "util/trusted_dir.hpp"

struct redisReader;

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
// quotes the password). Its scheme and userinfo are address_parts' (the
// split redact_address shows), so what a message hides is what AUTH sends.
Result<RedisAddress> parse_redis_url(const std::string& url);

struct RedisTimeouts {
  std::chrono::milliseconds connect{500};     // the TCP or unix connect
  std::chrono::milliseconds operation{2000};  // one whole exchange: send and the whole reply
};

constexpr std::size_t kRedisMaxValue = std::size_t(512) << 20;  // Redis's longest string

class RedisClient {
 public:
  // `max_value`: the longest value get() accepts; a longer reply is refused
  // from its header, before anything is allocated for it.
  static ServerResult<RedisClient> connect(const RedisAddress& address,
                                           const RedisTimeouts& timeouts,
                                           std::size_t max_value = kRedisMaxValue);
  // The seam under connect(): a client on a socket already connected (a
  // test's socketpair to a fake server), after AUTH and SELECT as
  // `address` asks.
  static ServerResult<RedisClient> open(UniqueFd connection, const RedisAddress& address,
                                        const RedisTimeouts& timeouts,
                                        std::size_t max_value = kRedisMaxValue);

  // The value, nothing when the key is absent.
  ServerResult<std::optional<std::string>> get(const std::string& key);
  // SET key value [PX ms] [NX]; false when NX and the key existed.
  ServerResult<bool> set(const std::string& key, const std::string& value,
                         std::optional<std::chrono::milliseconds> expiry = std::nullopt,
                         bool only_if_absent = false);
  // Whether `key` exists (EXISTS), without reading its value.
  ServerResult<bool> exists(const std::string& key);
  // Deletes `key` only while it still holds `value` (a lease we own).
  ServerStatus delete_if(const std::string& key, const std::string& value);

 private:
  struct ReaderFree {
    void operator()(redisReader* r) const;
  };
  using Clock = std::chrono::steady_clock;
  RedisClient(UniqueFd fd, const RedisTimeouts& timeouts, std::size_t max_value);
  // One command's reply (a redisReply*, freed by the caller), by the deadline.
  ServerResult<void*> exchange(const std::vector<std::string>& words);
  ServerStatus send(const std::vector<std::string>& words, Clock::time_point deadline);
  // Some bytes (at most `room`) into `to`, by the deadline.
  ServerResult<std::size_t> receive(char* to, std::size_t room, Clock::time_point deadline);
  ServerResult<void*> parse_rest(std::string_view got, Clock::time_point deadline);

  UniqueFd fd_;
  std::unique_ptr<redisReader, ReaderFree> reader_;
  RedisTimeouts timeouts_;
  std::size_t max_value_ = kRedisMaxValue;
};

}  // namespace kbuild
