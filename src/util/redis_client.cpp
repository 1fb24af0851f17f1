#include "util/redis_client.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

#include "kbuild/error.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

bool parse_int(const std::string& text, int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

// The user and password of `userinfo` ("[USER]:PASSWORD", as
// address_parts split it off the host) into `a`.
Status take_credentials(std::string_view userinfo, RedisAddress& a) {
  const std::size_t colon = userinfo.find(':');
  if (colon == std::string::npos)
    return Failure{"a user without a password (write USER:PASSWORD@ or :PASSWORD@)"};
  auto user = percent_decoded(std::string(userinfo.substr(0, colon)));
  auto password = percent_decoded(std::string(userinfo.substr(colon + 1)));
  if (!user || !password) return Failure{"a bad %XX escape in the user or password"};
  if (password->empty()) return Failure{"an empty password"};
  a.user = *user;
  a.password = *password;
  return ok();
}

}  // namespace

Result<RedisAddress> parse_redis_url(const std::string& url) {
  const std::string usage = "give redis://HOST:PORT[/DB] or unix:///PATH";
  RedisAddress a;
  // Split as redact_address splits it: what is shown hidden is what is sent.
  const AddressParts parts = address_parts(url);
  if (parts.scheme == "unix://") {
    if (parts.userinfo) return Failure{"no socket path; " + usage};
    a.socket = std::string(parts.rest);
    auto q = a.socket.find("?db=");
    if (q != std::string::npos) {
      if (!parse_int(a.socket.substr(q + 4), a.db)) return Failure{"bad database number; " + usage};
      a.socket.resize(q);
    }
    if (a.socket.empty() || a.socket[0] != '/') return Failure{"no socket path; " + usage};
    return a;
  }
  if (parts.scheme != "redis://") return Failure{"not a redis:// or unix:// address; " + usage};
  if (parts.userinfo)
    if (Status credentials = take_credentials(*parts.userinfo, a); !credentials)
      return Failure{credentials.why() + "; give redis://[USER]:PASSWORD@HOST:PORT[/DB]"};
  std::string rest(parts.rest);
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

namespace {

using Clock = std::chrono::steady_clock;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// Replies other than a GET's value are a few bytes; anything longer is a
// server that lies.
constexpr std::size_t kMaxOtherReply = 1u << 20;

// Waits until `fd` is ready for `events`, by `deadline`. Interrupts are
// taken meanwhile (also those an InterruptGuard held pending): one ends the
// wait with Error(interrupted).
ServerStatus wait_ready(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    if (int sig = interrupt_received())
      throw Error(ErrorKind::interrupted, std::string("interrupted by signal ") +
                                              std::to_string(sig) + " while the remote cache " +
                                              what);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return Faulted{Fault::timeout, std::string("no answer within the timeout (the server ") +
                                         what +
                                         " too slowly; raise KBUILD_REMOTE_CACHE_TIMEOUT_MS or "
                                         "check the server)"};
    struct pollfd fds[2] = {{fd, events, 0}, {interrupt_fd(), POLLIN, 0}};
    const int n = ::poll(fds, fds[1].fd >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR)
      return Faulted{Fault::down, std::string("poll: ") + std::strerror(errno)};
    if (n > 0 && fds[0].revents != 0) return Done{};
  }
}

// A non-blocking socket connected to `address` by `deadline`.
ServerResult<UniqueFd> open_connection(const RedisAddress& address, Clock::time_point deadline) {
  auto down = [](const std::string& why) { return Faulted{Fault::down, "cannot connect: " + why}; };
  auto connect_one = [deadline, &down](int family, const sockaddr* to,
                                       socklen_t size) -> ServerResult<UniqueFd> {
    UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return down(std::strerror(errno));
    if (::connect(fd.get(), to, size) != 0) {
      if (errno != EINPROGRESS && errno != EAGAIN) return down(std::strerror(errno));
      if (ServerStatus ready = wait_ready(fd.get(), POLLOUT, deadline, "accepted the connection");
          !ready)
        return ready.faulted("cannot connect: ");
      int error = 0;
      socklen_t len = sizeof error;
      if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0)
        return down(std::strerror(error ? error : errno));
    }
    return fd;
  };
  if (!address.socket.empty()) {
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    if (address.socket.size() >= sizeof to.sun_path) return down("the socket path is too long");
    std::memcpy(to.sun_path, address.socket.c_str(), address.socket.size() + 1);
    return connect_one(AF_UNIX, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (int e = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); e != 0)
    return down(address.host + ": " + gai_strerror(e));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, freeaddrinfo);
  ServerResult<UniqueFd> last = down("no address for " + address.host);
  for (addrinfo* a = found; a; a = a->ai_next) {
    last = connect_one(a->ai_family, a->ai_addr, a->ai_addrlen);
    if (last) break;
  }
  return last;
}

// The length in a bulk reply's first line ("$123\r\n" in `head`), -1 for
// nil; nullopt when `head` is not one (an error, another type).
std::optional<long long> bulk_length(std::string_view head, std::size_t line_end) {
  if (head.empty() || head[0] != '$') return std::nullopt;
  long long n = 0;
  auto [end, ec] = std::from_chars(head.data() + 1, head.data() + line_end, n);
  if (ec != std::errc() || end != head.data() + line_end || n < -1) return std::nullopt;
  return n;
}

// The server's own words in an error reply: it refused the command.
Faulted refusal(const char* command, const redisReply& reply) {
  return {Fault::refused, std::string(command) + ": " + std::string(reply.str, reply.len)};
}

ServerResult<std::optional<std::string>> value_of(ServerResult<void*> reply) {
  if (!reply) return reply.faulted("GET: ");
  Reply r(static_cast<redisReply*>(*reply));
  if (r->type == REDIS_REPLY_NIL) return std::optional<std::string>();
  if (r->type == REDIS_REPLY_ERROR) return refusal("GET", *r);
  if (r->type != REDIS_REPLY_STRING) return Faulted{Fault::down, "GET: not a string"};
  return std::optional<std::string>(std::string(r->str, r->len));
}

}  // namespace

void RedisClient::ReaderFree::operator()(redisReader* r) const {
  redisReaderFree(r);
}

RedisClient::RedisClient(UniqueFd fd, const RedisTimeouts& timeouts, std::size_t max_value)
    : fd_(std::move(fd)),
      reader_(redisReaderCreate()),
      timeouts_(timeouts),
      max_value_(max_value) {}

ServerResult<RedisClient> RedisClient::connect(const RedisAddress& address,
                                               const RedisTimeouts& timeouts,
                                               std::size_t max_value) {
  ServerResult<UniqueFd> fd = [&] {
    InterruptsTaken interrupts;
    return open_connection(address, Clock::now() + timeouts.connect);
  }();
  if (!fd) return fd.faulted();
  return open(std::move(*fd), address, timeouts, max_value);
}

ServerResult<RedisClient> RedisClient::open(UniqueFd connection, const RedisAddress& address,
                                            const RedisTimeouts& timeouts, std::size_t max_value) {
  // Each exchange waits by poll() against its deadline: never in a read.
  const int flags = ::fcntl(connection.get(), F_GETFL);
  if (flags < 0 || ::fcntl(connection.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    return Faulted{Fault::down, std::string("cannot connect: ") + std::strerror(errno)};
  RedisClient client(std::move(connection), timeouts, max_value);
  if (!client.reader_) return Faulted{Fault::down, "out of memory"};
  auto command = [&client](const char* name,
                           const std::vector<std::string>& words) -> ServerStatus {
    ServerResult<void*> r = client.exchange(words);
    if (!r) return r.faulted(std::string(name) + ": ");
    // Redis's own words (WRONGPASS...), never the password.
    Reply reply(static_cast<redisReply*>(*r));
    if (reply->type == REDIS_REPLY_ERROR) return refusal(name, *reply);
    return Done{};
  };
  if (!address.password.empty()) {
    std::vector<std::string> words{"AUTH"};
    if (!address.user.empty()) words.push_back(address.user);
    words.push_back(address.password);
    if (ServerStatus auth = command("AUTH", words); !auth) return auth.faulted();
  }
  if (address.db != 0)
    if (ServerStatus select = command("SELECT", {"SELECT", std::to_string(address.db)}); !select)
      return select.faulted();
  return client;
}

ServerStatus RedisClient::send(const std::vector<std::string>& words, Clock::time_point deadline) {
  if (!fd_.valid())
    return Faulted{Fault::down, "the connection was given up after an earlier failure"};
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const std::string& w : words) {
    argv.push_back(w.data());
    lengths.push_back(w.size());
  }
  char* formatted = nullptr;
  const int size = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(),
                                          lengths.data());
  if (size < 0) return Faulted{Fault::down, "out of memory"};
  std::unique_ptr<char, void (*)(char*)> command(formatted, redisFreeCommand);
  std::string_view left(formatted, static_cast<std::size_t>(size));
  while (!left.empty()) {
    // MSG_NOSIGNAL: a server that closed the connection is a failure, not SIGPIPE.
    const ssize_t n = ::send(fd_.get(), left.data(), left.size(), MSG_NOSIGNAL);
    if (n > 0) {
      left.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Faulted{Fault::down, std::strerror(errno)};
    if (ServerStatus ready = wait_ready(fd_.get(), POLLOUT, deadline, "took the request"); !ready)
      return ready;
  }
  return Done{};
}

ServerResult<std::size_t> RedisClient::receive(char* to, std::size_t room,
                                               Clock::time_point deadline) {
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), to, room, 0);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) return Faulted{Fault::down, "the server closed the connection"};
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Faulted{Fault::down, std::strerror(errno)};
    if (ServerStatus ready = wait_ready(fd_.get(), POLLIN, deadline, "answered"); !ready)
      return ready.faulted();
  }
}

// The reply `got` begins, read on through hiredis's parser.
ServerResult<void*> RedisClient::parse_rest(std::string_view got, Clock::time_point deadline) {
  std::size_t total = 0;
  char buffer[1 << 14];
  for (;;) {
    if (!got.empty() && redisReaderFeed(reader_.get(), got.data(), got.size()) != REDIS_OK)
      return Faulted{Fault::down, "bad reply"};
    void* reply = nullptr;
    if (redisReaderGetReply(reader_.get(), &reply) != REDIS_OK)
      return Faulted{Fault::down, "bad reply"};
    if (reply) return reply;
    if ((total += got.size()) > kMaxOtherReply)
      return Faulted{Fault::too_large, "a reply longer than expected"};
    ServerResult<std::size_t> n = receive(buffer, sizeof buffer, deadline);
    if (!n) return n.faulted();
    got = std::string_view(buffer, *n);
  }
}

ServerResult<void*> RedisClient::exchange(const std::vector<std::string>& words) {
  InterruptsTaken interrupts;
  const Clock::time_point deadline = Clock::now() + timeouts_.operation;
  ServerStatus sent = send(words, deadline);
  ServerResult<void*> reply = sent ? parse_rest({}, deadline) : sent.faulted();
  if (!reply) fd_.reset();  // a reply half read: the connection is out of step
  return reply;
}

// A bulk reply is read straight from the socket into the string returned
// (hiredis would copy a 1 MiB entry twice more: a third of a remote hit,
// docs/farm.md), growing as bytes arrive; its length is checked against
// max_value_ first. Anything else goes to hiredis's parser.
ServerResult<std::optional<std::string>> RedisClient::get(const std::string& key) {
  InterruptsTaken interrupts;
  const Clock::time_point deadline = Clock::now() + timeouts_.operation;
  auto failed = [this](Faulted faulted) -> ServerResult<std::optional<std::string>> {
    fd_.reset();  // a reply half read: the connection is out of step
    faulted.why = "GET: " + faulted.why;
    return faulted;
  };
  auto bad_reply = [&failed] { return failed({Fault::down, "bad reply"}); };
  if (ServerStatus sent = send({"GET", key}, deadline); !sent) return failed(sent.faulted());
  char head[1 << 16];
  std::size_t got = 0, line_end = std::string_view::npos;
  // The first line: "$N\r\n" is at most 23 bytes.
  while (line_end == std::string_view::npos) {
    ServerResult<std::size_t> n = receive(head + got, sizeof head - got, deadline);
    if (!n) return failed(n.faulted());
    got += *n;
    line_end = std::string_view(head, got).find("\r\n");
    if (head[0] != '$' || (line_end == std::string_view::npos && got > 24)) break;
  }
  const std::string_view first(head, got);
  std::optional<long long> n =
      line_end == std::string_view::npos ? std::nullopt : bulk_length(first, line_end);
  if (!n) {
    ServerResult<std::optional<std::string>> value = value_of(parse_rest(first, deadline));
    if (!value) fd_.reset();
    return value;
  }
  const std::size_t body = line_end + 2;
  if (*n == -1)
    return first.size() == body ? ServerResult<std::optional<std::string>>(std::nullopt)
                                : bad_reply();
  const auto size = static_cast<unsigned long long>(*n);
  if (size > max_value_)
    return failed({Fault::too_large, "a value of " + std::to_string(size) +
                                         " bytes, more than the " + std::to_string(max_value_) +
                                         " accepted (KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES)"});
  const std::size_t want = static_cast<std::size_t>(size) + 2;  // with the closing \r\n
  if (first.size() - body > want) return bad_reply();
  std::string value(first.substr(body));
  std::size_t have = value.size();
  while (have < want) {
    // Grown as bytes arrive: a header alone never allocates the whole length.
    if (have == value.size())
      value.resize(std::min(want, std::max<std::size_t>(2 * value.size(), sizeof head)));
    ServerResult<std::size_t> m = receive(value.data() + have, value.size() - have, deadline);
    if (!m) return failed(m.faulted());
    have += *m;
  }
  if (value.compare(size, 2, "\r\n") != 0) return bad_reply();
  value.resize(size);
  return std::optional<std::string>(std::move(value));
}

ServerResult<bool> RedisClient::set(const std::string& key, const std::string& value,
                                    std::optional<std::chrono::milliseconds> expiry,
                                    bool only_if_absent) {
  std::vector<std::string> words{"SET", key, value};
  if (expiry) words.insert(words.end(), {"PX", std::to_string(expiry->count())});
  if (only_if_absent) words.emplace_back("NX");
  ServerResult<void*> r = exchange(words);
  if (!r) return r.faulted("SET: ");
  Reply reply(static_cast<redisReply*>(*r));
  if (reply->type == REDIS_REPLY_ERROR) return refusal("SET", *reply);
  return reply->type != REDIS_REPLY_NIL;
}

ServerResult<bool> RedisClient::exists(const std::string& key) {
  ServerResult<void*> r = exchange({"EXISTS", key});
  if (!r) return r.faulted("EXISTS: ");
  Reply reply(static_cast<redisReply*>(*r));
  if (reply->type == REDIS_REPLY_ERROR) return refusal("EXISTS", *reply);
  if (reply->type != REDIS_REPLY_INTEGER) return Faulted{Fault::down, "EXISTS: not a number"};
  return reply->integer > 0;
}

ServerStatus RedisClient::delete_if(const std::string& key, const std::string& value) {
  // Atomic compare-and-delete: never removes a lease someone else took
  // after ours expired.
  static const std::string script =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
      "return 0";
  ServerResult<void*> r = exchange({"EVAL", script, "1", key, value});
  if (!r) return r.faulted("EVAL: ");
  Reply reply(static_cast<redisReply*>(*r));
  if (reply->type == REDIS_REPLY_ERROR) return refusal("EVAL", *reply);
  return Done{};
}

}  // namespace kbuild
