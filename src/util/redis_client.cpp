#include "kbuild/redis_client.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <vector>

namespace kbuild {

namespace {

bool parse_int(const std::string& text, int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

struct timeval as_timeval(std::chrono::milliseconds ms) {
  struct timeval tv {};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Writing to a connection the server closed raises SIGPIPE, which would end
// kbuild (a dead server must be a miss): blocked while a command runs, and
// one raised meanwhile is taken off before unblocking.
class NoBrokenPipeSignal {
 public:
  NoBrokenPipeSignal() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &saved_);
  }
  ~NoBrokenPipeSignal() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const struct timespec now {};
      (void)sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  NoBrokenPipeSignal(const NoBrokenPipeSignal&) = delete;
  NoBrokenPipeSignal& operator=(const NoBrokenPipeSignal&) = delete;

 private:
  sigset_t pipe_{}, saved_{};
  bool was_pending_ = false;
};

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

}  // namespace

Result<RedisAddress> parse_redis_url(const std::string& url) {
  const std::string usage = "give redis://HOST:PORT[/DB] or unix:///PATH";
  RedisAddress a;
  if (url.rfind("unix://", 0) == 0) {
    a.socket = url.substr(7);
    auto q = a.socket.find("?db=");
    if (q != std::string::npos) {
      if (!parse_int(a.socket.substr(q + 4), a.db)) return Failure{"bad database number; " + usage};
      a.socket.resize(q);
    }
    if (a.socket.empty() || a.socket[0] != '/') return Failure{"no socket path; " + usage};
    return a;
  }
  if (url.rfind("redis://", 0) != 0) return Failure{"not a redis:// or unix:// address; " + usage};
  std::string rest = url.substr(8);
  auto slash = rest.find('/');
  if (slash != std::string::npos) {
    if (!parse_int(rest.substr(slash + 1), a.db)) return Failure{"bad database number; " + usage};
    rest.resize(slash);
  }
  // The port follows the last colon, after the brackets of an IPv6 [::1].
  const std::size_t host_end = rest.rfind(']');
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && (host_end == std::string::npos || colon > host_end)) {
    if (!parse_int(rest.substr(colon + 1), a.port) || a.port == 0 || a.port > 65535)
      return Failure{"bad port; " + usage};
    rest.resize(colon);
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']')
    rest = rest.substr(1, rest.size() - 2);
  if (rest.empty() || rest.find('@') != std::string::npos)
    return Failure{"no host (passwords are not supported in the address); " + usage};
  a.host = rest;
  return a;
}

void RedisClient::Free::operator()(redisContext* c) const {
  redisFree(c);
}

Result<RedisClient> RedisClient::connect(const RedisAddress& address,
                                         const RedisTimeouts& timeouts) {
  const struct timeval tv = as_timeval(timeouts.connect);
  redisContext* c = address.socket.empty()
                        ? redisConnectWithTimeout(address.host.c_str(), address.port, tv)
                        : redisConnectUnixWithTimeout(address.socket.c_str(), tv);
  if (!c) return Failure{"out of memory"};
  RedisClient client(c);
  if (c->err) return Failure{std::string("cannot connect: ") + c->errstr};
  if (redisSetTimeout(c, as_timeval(timeouts.operation)) != REDIS_OK)
    return Failure{"cannot set the operation timeout"};
  if (address.db != 0) {
    NoBrokenPipeSignal no_sigpipe;
    const std::string db = std::to_string(address.db);
    Reply r(static_cast<redisReply*>(redisCommand(c, "SELECT %s", db.c_str())));
    if (!r) return Failure{std::string("SELECT: ") + c->errstr};
    if (r->type == REDIS_REPLY_ERROR) return Failure{"SELECT: " + std::string(r->str, r->len)};
  }
  return client;
}

namespace {

Result<Reply> command(redisContext* c, const std::vector<std::string>& words) {
  NoBrokenPipeSignal no_sigpipe;
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& w : words) {
    argv.push_back(w.data());
    lengths.push_back(w.size());
  }
  Reply r(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data())));
  if (!r) return Failure{words[0] + ": " + (c->err ? c->errstr : "no reply")};
  if (r->type == REDIS_REPLY_ERROR) return Failure{words[0] + ": " + std::string(r->str, r->len)};
  return r;
}

}  // namespace

Result<std::optional<std::string>> RedisClient::get(const std::string& key) {
  Result<Reply> r = command(context_.get(), {"GET", key});
  if (!r) return Failure{r.why()};
  if ((*r)->type == REDIS_REPLY_NIL) return std::optional<std::string>();
  if ((*r)->type != REDIS_REPLY_STRING) return Failure{"GET: not a string"};
  return std::optional<std::string>(std::string((*r)->str, (*r)->len));
}

Result<bool> RedisClient::set(const std::string& key, const std::string& value,
                              std::optional<std::chrono::milliseconds> expiry,
                              bool only_if_absent) {
  std::vector<std::string> words{"SET", key, value};
  if (expiry) words.insert(words.end(), {"PX", std::to_string(expiry->count())});
  if (only_if_absent) words.emplace_back("NX");
  Result<Reply> r = command(context_.get(), words);
  if (!r) return Failure{r.why()};
  return (*r)->type != REDIS_REPLY_NIL;
}

Status RedisClient::delete_if(const std::string& key, const std::string& value) {
  // Atomic compare-and-delete: never removes a lease someone else took
  // after ours expired.
  static const std::string script =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
      "return 0";
  Result<Reply> r = command(context_.get(), {"EVAL", script, "1", key, value});
  if (!r) return Failure{r.why()};
  return ok();
}

}  // namespace kbuild
