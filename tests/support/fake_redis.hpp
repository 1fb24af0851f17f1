// A Redis server inside the test's process that speaks RESP on one end of a
// socketpair (RedisClient::open takes the other end): it parses the
// commands kbuild sends (AUTH, SELECT, GET, SET [PX ms] [NX], EXISTS, and
// EVAL of the compare-and-delete script) and answers them from a map, as
// Redis would. A test scripts a server that is down (closes the
// connection), hangs (reads and never answers: the client's time-out) or
// refuses (an error reply), and reads the commands it was sent. So the
// remote cache's lease, signature, damaged-entry and dead-server paths run
// without a redis-server (tests/e2e/remote_cache_test.cpp runs a real one).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "run/redis_store.hpp"
#include "run/remote_cache.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild_test {

class FakeRedis {
 public:
  using Clock = std::chrono::steady_clock;
  using Command = std::vector<std::string>;
  enum class Behaviour {
    answer,  // as Redis
    hang,    // reads, never answers
    close,   // closes the connection at the next command
    refuse,  // answers every command with an error (a full server: OOM)
  };

  FakeRedis() = default;
  FakeRedis(const FakeRedis&) = delete;
  FakeRedis& operator=(const FakeRedis&) = delete;
  ~FakeRedis() {
    for (int fd : server_ends_) ::shutdown(fd, SHUT_RDWR);  // wakes a blocked read
    for (std::thread& t : threads_) t.join();
    for (int fd : server_ends_) ::close(fd);
  }

  // A new client connection, served by its own thread.
  kbuild::UniqueFd connect() {
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return kbuild::UniqueFd();
    server_ends_.push_back(ends[1]);
    threads_.emplace_back([this, fd = ends[1]] { serve(fd); });
    return kbuild::UniqueFd(ends[0]);
  }

  // How a RemoteCache reaches this server: a RedisStore on a new connection
  // (the cache wraps it in its signed and read-only layers, as any backend).
  kbuild::RemoteStoreConnector connector() {
    return [this](const kbuild::RemoteCacheSettings& s)
               -> kbuild::ServerResult<std::unique_ptr<kbuild::RemoteStore>> {
      kbuild::ServerResult<kbuild::RedisClient> client =
          kbuild::RedisClient::open(connect(), s.address, s.timeouts, s.max_entry_bytes);
      if (!client) return client.faulted();
      return std::unique_ptr<kbuild::RemoteStore>(
          std::make_unique<kbuild::RedisStore>(std::move(*client)));
    };
  }
  // The names of the commands that change the server (SET, EVAL's delete...).
  std::vector<std::string> write_commands() {
    std::vector<std::string> writes;
    for (const std::string& name : command_names())
      if (name != "GET" && name != "EXISTS" && name != "AUTH" && name != "SELECT")
        writes.push_back(name);
    return writes;
  }

  void behave(Behaviour b) {
    std::lock_guard<std::mutex> lock(mutex_);
    behaviour_ = b;
  }
  // The value under `key` (nullopt: none, or expired).
  std::optional<std::string> value(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live(key);
  }
  void set_value(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    data_[key] = {value, std::nullopt};
  }
  void erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    data_.erase(key);
  }
  std::map<std::string, std::string> values() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, std::string> out;
    for (const auto& [key, entry] : data_) out[key] = entry.value;
    return out;
  }
  // The commands served so far, in order (AUTH's password included).
  std::vector<Command> commands() {
    std::lock_guard<std::mutex> lock(mutex_);
    return commands_;
  }
  // The names of the commands served (GET, SET...), in order.
  std::vector<std::string> command_names() {
    std::vector<std::string> names;
    for (const Command& c : commands()) names.push_back(c.empty() ? "" : c[0]);
    return names;
  }
  // Called with each command before it is answered (the server's map may
  // be changed through `set`, e.g. another builder's upload arriving).
  void on_command(std::function<void(const Command&, FakeRedis&)> hook) {
    std::lock_guard<std::mutex> lock(mutex_);
    hook_ = std::move(hook);
  }

 private:
  struct Stored {
    std::string value;
    std::optional<Clock::time_point> expires;
  };

  std::optional<std::string> live(const std::string& key) {
    auto it = data_.find(key);
    if (it == data_.end()) return std::nullopt;
    if (it->second.expires && Clock::now() >= *it->second.expires) {
      data_.erase(it);
      return std::nullopt;
    }
    return it->second.value;
  }

  static std::string bulk(const std::string& s) {
    return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
  }

  // One command's answer; nullopt: none (hang) or the connection closed.
  std::optional<std::string> answer(const Command& c, bool& close) {
    std::function<void(const Command&, FakeRedis&)> hook;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      commands_.push_back(c);
      hook = hook_;
    }
    if (hook) hook(c, *this);
    std::lock_guard<std::mutex> lock(mutex_);
    if (behaviour_ == Behaviour::close) close = true;
    if (behaviour_ != Behaviour::answer && behaviour_ != Behaviour::refuse) return std::nullopt;
    if (behaviour_ == Behaviour::refuse)
      return std::string("-OOM command not allowed when used memory > 'maxmemory'.\r\n");
    const std::string& name = c[0];
    if (name == "AUTH" || name == "SELECT") return std::string("+OK\r\n");
    if (name == "GET" && c.size() == 2) {
      std::optional<std::string> v = live(c[1]);
      return v ? bulk(*v) : std::string("$-1\r\n");
    }
    if (name == "EXISTS" && c.size() == 2) return live(c[1]) ? ":1\r\n" : ":0\r\n";
    if (name == "SET" && c.size() >= 3) {
      std::optional<Clock::time_point> expires;
      bool only_if_absent = false;
      for (std::size_t i = 3; i < c.size(); ++i) {
        if (c[i] == "NX") only_if_absent = true;
        if (c[i] == "PX" && i + 1 < c.size())
          expires = Clock::now() + std::chrono::milliseconds(std::stoll(c[++i]));
      }
      if (only_if_absent && live(c[1])) return std::string("$-1\r\n");
      data_[c[1]] = {c[2], expires};
      return std::string("+OK\r\n");
    }
    // EVAL script 1 KEY VALUE: kbuild's one script, delete KEY while it holds VALUE.
    if (name == "EVAL" && c.size() == 5 && c[2] == "1") {
      std::optional<std::string> v = live(c[3]);
      if (!v || *v != c[4]) return std::string(":0\r\n");
      data_.erase(c[3]);
      return std::string(":1\r\n");
    }
    return "-ERR unknown command '" + name + "'\r\n";
  }

  // Reads RESP arrays of bulk strings off `fd` and answers each.
  void serve(int fd) {
    std::string in;
    char buffer[1 << 16];
    for (;;) {
      std::optional<Command> command;
      while (!(command = take_command(in))) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) return;
        in.append(buffer, static_cast<std::size_t>(n));
      }
      bool close = false;
      std::optional<std::string> reply = answer(*command, close);
      if (close) {
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      if (!reply) continue;
      for (std::size_t at = 0; at < reply->size();) {
        const ssize_t n = ::send(fd, reply->data() + at, reply->size() - at, MSG_NOSIGNAL);
        if (n <= 0) return;
        at += static_cast<std::size_t>(n);
      }
    }
  }

  // The first whole command in `in`, taken off it; nullopt until one is whole.
  static std::optional<Command> take_command(std::string& in) {
    std::size_t at = 0;
    auto line = [&in, &at](char kind, long long& n) {
      if (at >= in.size() || in[at] != kind) return false;
      const std::size_t end = in.find("\r\n", at);
      if (end == std::string::npos) return false;
      n = std::stoll(in.substr(at + 1, end - at - 1));
      at = end + 2;
      return true;
    };
    long long words = 0;
    if (!line('*', words)) return std::nullopt;
    Command c;
    for (long long i = 0; i < words; ++i) {
      long long size = 0;
      if (!line('$', size)) return std::nullopt;
      const auto length = static_cast<std::size_t>(size);
      if (in.size() < at + length + 2) return std::nullopt;
      c.push_back(in.substr(at, length));
      at += length + 2;
    }
    in.erase(0, at);
    return c;
  }

  std::mutex mutex_;
  Behaviour behaviour_ = Behaviour::answer;
  std::map<std::string, Stored> data_;
  std::vector<Command> commands_;
  std::function<void(const Command&, FakeRedis&)> hook_;
  std::vector<int> server_ends_;
  std::vector<std::thread> threads_;
};

}  // namespace kbuild_test
