#include "run/http_store.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

#include "kbuild/error.hpp"
#include "kbuild_config.h"
#include "run/cache_key.hpp"
#include "util/environment.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

using Clock = std::chrono::steady_clock;

// The helper's own start (a dynamically linked program loading libcurl) on
// top of the exchange's time-outs, which the helper keeps itself: kbuild's
// deadline is the backstop for a helper that hangs.
constexpr std::chrono::milliseconds kHelperGrace{1000};
// A status frame is a few words; an error message a line.
constexpr std::size_t kMaxStatusFrame = 4096;

std::string timeout_message() {
  return "no answer within the timeout (the server answered too slowly; raise "
         "KBUILD_REMOTE_CACHE_TIMEOUT_MS or check the server)";
}

// Waits until `fd` is ready for `events` by `deadline`; an interrupt ends the
// wait with Error(interrupted).
ServerStatus wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    if (int sig = interrupt_received())
      throw Error(ErrorKind::interrupted, "interrupted by signal " + std::to_string(sig) +
                                              " while the remote cache answered");
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Faulted{Fault::timeout, timeout_message()};
    struct pollfd fds[2] = {{fd, events, 0}, {interrupt_fd(), POLLIN, 0}};
    const int n = ::poll(fds, fds[1].fd >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR)
      return Faulted{Fault::down, std::string("poll: ") + std::strerror(errno)};
    // An interrupt first, though the helper answered (or ended) too.
    if (n > 0 && fds[0].revents != 0 && interrupt_received() == 0) return Done{};
  }
}

ServerStatus write_by(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return Faulted{Fault::down, "the helper kbuild-http ended"};
    if (ServerStatus ready = wait_ready(fd, POLLOUT, deadline); !ready) return ready;
  }
  return Done{};
}

bool key_char_plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

}  // namespace

std::string HttpStore::entry_url(const std::string& name) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string url = settings_.address.base + "/";
  for (char c : name) {
    if (key_char_plain(c)) {
      url += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      url += '%';
      url += kHex[byte >> 4];
      url += kHex[byte & 15];
    }
  }
  return url;
}

HttpStore::~HttpStore() {
  stop_helper();
}

Status HttpStore::start_helper() {
  std::optional<std::string> program = helper_program("kbuild-http");
  if (!program)
    return Failure{"kbuild-http (the HTTP remote cache's helper) is missing beside kbuild and in " +
                   std::string(KBUILD_INSTALLED_LIBEXEC_DIR) + "; reinstall kbuild"};
  // kbuild ends the helper itself (it ignores Ctrl-C: kbuild says why it
  // stopped, not the helper's end); SIGPIPE ends it once kbuild is gone.
  Result<Coprocess> started = processes_.start({*program});
  if (!started) return Failure{started.why()};
  helper_ = std::move(*started);
  pending_.clear();
  return ok();
}

void HttpStore::stop_helper() {
  helper_.end();
}

ServerResult<HttpStore::Answer> HttpStore::exchange(const char* verb, const std::string& name,
                                                    std::string_view body) {
  InterruptsTaken interrupts;
  if (!helper_.running())
    if (Status started = start_helper(); !started) return Faulted{Fault::down, started.why()};
  auto out_of_step = [] {
    return Faulted{Fault::down, "the helper kbuild-http answered out of step"};
  };
  const Clock::time_point deadline =
      Clock::now() + settings_.connect + settings_.operation + kHelperGrace;
  // Reads one frame; `limit` is checked against its length before anything
  // is allocated for it.
  auto read_frame = [this, deadline, &out_of_step](std::size_t limit,
                                                   const char* what) -> ServerResult<std::string> {
    char buffer[1 << 16];
    auto fill = [&]() -> ServerStatus {
      for (;;) {
        const ssize_t n = ::read(helper_.from_child(), buffer, sizeof buffer);
        if (n > 0) {
          pending_.append(buffer, static_cast<std::size_t>(n));
          return Done{};
        }
        if (n == 0) return Faulted{Fault::down, "the helper kbuild-http ended"};
        if (errno == EINTR) continue;
        if (errno != EAGAIN)
          return Faulted{Fault::down, std::string("read: ") + std::strerror(errno)};
        if (ServerStatus ready = wait_ready(helper_.from_child(), POLLIN, deadline); !ready)
          return ready;
      }
    };
    std::size_t newline = 0;
    while ((newline = pending_.find('\n')) == std::string::npos) {
      if (pending_.size() > 20) return out_of_step();
      if (ServerStatus more = fill(); !more) return more.faulted();
    }
    std::size_t length = 0;
    auto [end, ec] = std::from_chars(pending_.data(), pending_.data() + newline, length);
    if (ec != std::errc() || end != pending_.data() + newline) return out_of_step();
    if (length > limit)
      return Faulted{Fault::too_large, std::string(what) + " of " + std::to_string(length) +
                                           " bytes, more than the " + std::to_string(limit) +
                                           " accepted (KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES)"};
    pending_.erase(0, newline + 1);
    // The helper holds the whole answer already (within the limit): room
    // for it at once, and no copy when it is all that is left.
    pending_.reserve(length);
    while (pending_.size() < length)
      if (ServerStatus more = fill(); !more) return more.faulted();
    if (pending_.size() == length) return std::exchange(pending_, std::string());
    std::string frame = pending_.substr(0, length);
    pending_.erase(0, length);
    return frame;
  };
  auto failed = [this](Faulted faulted) -> ServerResult<Answer> {
    stop_helper();  // out of step, or stuck: the next exchange starts another
    return faulted;
  };
  const std::string url = entry_url(name);
  std::string head;
  for (std::string_view field :
       {std::string_view(verb), std::string_view(url), std::string_view(settings_.address.user),
        std::string_view(settings_.address.password), std::string_view(settings_.authorization)})
    head += http_frame(field);
  head += http_frame(std::to_string(settings_.connect.count()));
  head += http_frame(std::to_string((settings_.connect + settings_.operation).count()));
  head += http_frame(std::to_string(settings_.max_answer));
  head += std::to_string(body.size()) + "\n";
  if (ServerStatus sent = write_by(helper_.to_child(), head, deadline); !sent)
    return failed(sent.faulted());
  if (ServerStatus sent = write_by(helper_.to_child(), body, deadline); !sent)
    return failed(sent.faulted());
  ServerResult<std::string> status = read_frame(kMaxStatusFrame, "a status");
  if (!status) return failed(status.faulted());
  ServerResult<std::string> answer = read_frame(settings_.max_answer, "an answer");
  if (!answer) return failed(answer.faulted());
  // The helper's failures, typed by the word before the reason.
  for (auto [word, fault] : {std::pair{"fail ", Fault::down}, std::pair{"timeout ", Fault::timeout},
                             std::pair{"large ", Fault::too_large}}) {
    const std::size_t length = std::strlen(word);
    if (status->compare(0, length, word) == 0)
      return Faulted{fault, redact_urls(status->substr(length))};
  }
  int code = 0;
  if (status->rfind("http ", 0) != 0 ||
      std::from_chars(status->data() + 5, status->data() + status->size(), code).ec != std::errc())
    return failed(out_of_step());
  return Answer{code, std::move(*answer)};
}

namespace {

// What an HTTP status other than success says: the server refused (a 4xx,
// 413 an entry too large), or it is down (a 5xx; 504 a gateway's
// time-out).
Faulted http_failure(const char* verb, int status) {
  std::string why = std::string(verb) + ": the server answered HTTP " + std::to_string(status);
  if (std::string_view(verb) == "PUT" && (status == 405 || status == 403 || status == 501))
    why += " (does it take PUT? nginx: dav_methods PUT; and may it write the directory?)";
  if (status == 401)
    why += " (check the address's USER:PASSWORD or KBUILD_REMOTE_CACHE_AUTHORIZATION)";
  const Fault fault = status == 413                    ? Fault::too_large
                      : status == 408 || status == 504 ? Fault::timeout
                      : status >= 500                  ? Fault::down
                                                       : Fault::refused;
  return {fault, std::move(why)};
}

}  // namespace

ServerResult<std::optional<FetchedEntry>> HttpStore::get(const std::string& key) {
  ServerResult<Answer> answer = exchange("GET", http_entry_name(key), {});
  if (!answer) return answer.faulted("GET: ");
  if (answer->status == 404 || answer->status == 410) return std::optional<FetchedEntry>();
  if (answer->status != 200) return http_failure("GET", answer->status);
  return std::optional<FetchedEntry>(FetchedEntry{std::move(answer->body), ""});
}

ServerResult<std::size_t> HttpStore::put(const std::string& key, const std::string& bytes) {
  ServerResult<Answer> answer = exchange("PUT", http_entry_name(key), bytes);
  if (!answer) return answer.faulted("PUT: ");
  if (answer->status < 200 || answer->status > 299) return http_failure("PUT", answer->status);
  return bytes.size();
}

ServerResult<bool> HttpStore::exists(const std::string& key) {
  ServerResult<Answer> answer = exchange("HEAD", http_entry_name(key), {});
  if (!answer) return answer.faulted("HEAD: ");
  if (answer->status == 404 || answer->status == 410) return false;
  if (answer->status != 200) return http_failure("HEAD", answer->status);
  return true;
}

}  // namespace kbuild
