#include "kbuild/redis_client.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

#include "util/input_record.hpp"

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

// %XX escapes (a password holding '@', ':' or '/'), decoded.
std::optional<std::string> percent_decoded(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc() || end != text.data() + i + 3) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

// Takes "[USER]:PASSWORD@" off the front of `rest` (host, port and database
// after it) into `a`.
Status take_credentials(std::string& rest, RedisAddress& a) {
  // Hosts and database numbers hold no '@': the last one ends the password.
  const std::size_t at = rest.rfind('@');
  if (at == std::string::npos) return ok();
  const std::string userinfo = rest.substr(0, at);
  const std::size_t colon = userinfo.find(':');
  if (colon == std::string::npos)
    return Failure{"a user without a password (write USER:PASSWORD@ or :PASSWORD@)"};
  auto user = percent_decoded(userinfo.substr(0, colon));
  auto password = percent_decoded(userinfo.substr(colon + 1));
  if (!user || !password) return Failure{"a bad %XX escape in the user or password"};
  if (password->empty()) return Failure{"an empty password"};
  a.user = *user;
  a.password = *password;
  rest.erase(0, at + 1);
  return ok();
}

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
  if (Status credentials = take_credentials(rest, a); !credentials)
    return Failure{credentials.why() + "; give redis://[USER]:PASSWORD@HOST:PORT[/DB]"};
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
  if (rest.empty()) return Failure{"no host; " + usage};
  a.host = rest;
  return a;
}

std::string redact_redis_url(const std::string& url) {
  if (url.rfind("redis://", 0) != 0) return url;
  const std::size_t at = url.rfind('@');
  if (at == std::string::npos || at < 8) return url;
  const std::size_t colon = url.find(':', 8);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

void RedisClient::Free::operator()(redisContext* c) const {
  redisFree(c);
}

Result<RedisClient> RedisClient::connect(const RedisAddress& address,
                                         const RedisTimeouts& timeouts) {
  record_uncacheable();  // a server's answer has no stamp
  const struct timeval tv = as_timeval(timeouts.connect);
  redisContext* c = address.socket.empty()
                        ? redisConnectWithTimeout(address.host.c_str(), address.port, tv)
                        : redisConnectUnixWithTimeout(address.socket.c_str(), tv);
  if (!c) return Failure{"out of memory"};
  RedisClient client(c);
  if (c->err) return Failure{std::string("cannot connect: ") + c->errstr};
  if (redisSetTimeout(c, as_timeval(timeouts.operation)) != REDIS_OK)
    return Failure{"cannot set the operation timeout"};
  if (!address.password.empty()) {
    NoBrokenPipeSignal no_sigpipe;
    std::vector<const char*> argv{"AUTH"};
    std::vector<size_t> lengths{4};
    if (!address.user.empty()) {
      argv.push_back(address.user.data());
      lengths.push_back(address.user.size());
    }
    argv.push_back(address.password.data());
    lengths.push_back(address.password.size());
    Reply r(static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data())));
    if (!r) return Failure{std::string("AUTH: ") + c->errstr};
    // Redis's own words (WRONGPASS...), never the password.
    if (r->type == REDIS_REPLY_ERROR) return Failure{"AUTH: " + std::string(r->str, r->len)};
  }
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

namespace {

constexpr std::size_t kMaxBulk = 512u << 20;  // Redis's longest string

// The whole `want` bytes from the connection (blocking, with the timeout
// redisSetTimeout gave the socket).
Status read_exactly(int fd, char* to, std::size_t want) {
  while (want > 0) {
    ssize_t n = ::read(fd, to, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failure{std::string("GET: ") + std::strerror(errno)};
    if (n == 0) return Failure{"GET: the server closed the connection"};
    to += n;
    want -= static_cast<std::size_t>(n);
  }
  return ok();
}

// The length in a bulk reply's first line ("$123\r\n" in `head`), -1 for
// nil; nullopt when `head` is not one (an error, another type, cut short).
std::optional<long long> bulk_length(std::string_view head, std::size_t& line_end) {
  line_end = head.find("\r\n");
  if (head.empty() || head[0] != '$' || line_end == std::string_view::npos) return std::nullopt;
  long long n = 0;
  auto [end, ec] = std::from_chars(head.data() + 1, head.data() + line_end, n);
  if (ec != std::errc() || end != head.data() + line_end || n < -1) return std::nullopt;
  return n;
}

Result<std::optional<std::string>> from_reply(Result<Reply> r) {
  if (!r) return Failure{r.why()};
  if ((*r)->type == REDIS_REPLY_NIL) return std::optional<std::string>();
  if ((*r)->type != REDIS_REPLY_STRING) return Failure{"GET: not a string"};
  return std::optional<std::string>(std::string((*r)->str, (*r)->len));
}

}  // namespace

// A bulk reply is read straight from the socket into the string returned:
// hiredis would read a 1 MiB entry 16 KiB at a time into a growing buffer
// and copy it twice more (a third of a remote hit, docs/farm.md). Anything
// else (an error, a reply cut short in its first line) goes to hiredis's
// reader with the bytes already read.
Result<std::optional<std::string>> RedisClient::get(const std::string& key) {
  redisContext* c = context_.get();
  if (c->reader->pos != c->reader->len || c->reader->ridx != -1)
    return from_reply(command(c, {"GET", key}));  // hiredis holds unread bytes
  NoBrokenPipeSignal no_sigpipe;
  const char* argv[] = {"GET", key.data()};
  const size_t lengths[] = {3, key.size()};
  int sent = 0;
  if (redisAppendCommandArgv(c, 2, argv, lengths) != REDIS_OK) return Failure{"GET: out of memory"};
  while (!sent)
    if (redisBufferWrite(c, &sent) != REDIS_OK) return Failure{std::string("GET: ") + c->errstr};
  char head[1 << 16];
  ssize_t got = -1;
  while ((got = ::read(c->fd, head, sizeof head)) < 0 && errno == EINTR) {
  }
  if (got <= 0)
    return Failure{got == 0 ? "GET: the server closed the connection"
                            : std::string("GET: ") + std::strerror(errno)};
  const std::string_view first(head, static_cast<std::size_t>(got));
  std::size_t line_end = 0;
  std::optional<long long> n = bulk_length(first, line_end);
  if (!n) {
    if (redisReaderFeed(c->reader, head, first.size()) != REDIS_OK)
      return Failure{"GET: bad reply"};
    void* reply = nullptr;
    if (redisGetReply(c, &reply) != REDIS_OK) return Failure{std::string("GET: ") + c->errstr};
    Reply r(static_cast<redisReply*>(reply));
    if (r->type == REDIS_REPLY_ERROR) return Failure{"GET: " + std::string(r->str, r->len)};
    return from_reply(std::move(r));
  }
  const std::size_t body = line_end + 2;
  if (*n == -1)
    return first.size() == body ? Result<std::optional<std::string>>(std::nullopt)
                                : Failure{"GET: bad reply"};
  const auto size = static_cast<std::size_t>(*n);
  if (size > kMaxBulk) return Failure{"GET: a reply larger than Redis's strings"};
  std::string value(size + 2, '\0');  // with the closing \r\n
  const std::size_t have = std::min(first.size() - body, value.size());
  if (first.size() - body > value.size()) return Failure{"GET: bad reply"};
  std::memcpy(value.data(), head + body, have);
  if (Status rest = read_exactly(c->fd, value.data() + have, value.size() - have); !rest)
    return Failure{rest.why()};
  if (value.compare(size, 2, "\r\n") != 0) return Failure{"GET: bad reply"};
  value.resize(size);
  return std::optional<std::string>(std::move(value));
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
