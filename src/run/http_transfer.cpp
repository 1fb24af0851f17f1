#include "run/http_transfer.hpp"

#include <curl/curl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "run/http_store.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

// Reads `in` whole frames at a time (blocking: kbuild keeps the deadline).
class FrameReader {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}
  // The next frame, at most `limit` bytes; false at the end or out of step.
  bool next(std::string& frame, std::size_t limit) {
    std::size_t newline = 0;
    while ((newline = buffer_.find('\n')) == std::string::npos) {
      if (buffer_.size() > 20 || !fill()) return false;
    }
    std::size_t length = 0;
    auto [end, ec] = std::from_chars(buffer_.data(), buffer_.data() + newline, length);
    if (ec != std::errc() || end != buffer_.data() + newline || length > limit) return false;
    buffer_.erase(0, newline + 1);
    if (buffer_.size() < length) buffer_.reserve(length);
    while (buffer_.size() < length)
      if (!fill()) return false;
    frame.assign(buffer_, 0, length);
    buffer_.erase(0, length);
    return true;
  }

 private:
  bool fill() {
    char chunk[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
  }
  int fd_;
  std::string buffer_;
};

bool write_whole(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

struct Request {
  std::string verb, url, user, password, authorization, body;
  long connect_ms = 0, total_ms = 0;
  curl_off_t max_answer = 0;
};

struct Download {
  std::string body;
  curl_off_t limit = 0;
  bool too_long = false;
};

std::size_t take_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* download = static_cast<Download*>(user);
  const std::size_t n = size * count;
  // A chunked answer has no length to refuse beforehand: refused as it grows.
  if (static_cast<curl_off_t>(download->body.size() + n) > download->limit) {
    download->too_long = true;
    return 0;
  }
  download->body.append(data, n);
  return n;
}

struct Upload {
  std::string_view left;
};

std::size_t give_body(char* to, std::size_t size, std::size_t count, void* user) {
  auto* upload = static_cast<Upload*>(user);
  const std::size_t n = std::min(size * count, upload->left.size());
  std::memcpy(to, upload->left.data(), n);
  upload->left.remove_prefix(n);
  return n;
}

struct SlistFree {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// One request through `curl` (its connection kept between requests):
// "http STATUS" and the body, or "timeout WHY", "large WHY" or "fail WHY".
std::pair<std::string, std::string> perform(CURL* curl, const Request& request) {
  curl_easy_reset(curl);
  char error[CURL_ERROR_SIZE] = "";
  Download download{{}, request.max_answer, false};
  Upload upload{request.body};
  std::unique_ptr<curl_slist, SlistFree> headers;
  auto add_header = [&headers](const std::string& line) {
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (grown) {
      (void)headers.release();
      headers.reset(grown);
    }
  };
  // No "Expect: 100-continue": curl would wait up to a second before a body.
  add_header("Expect:");
  if (!request.authorization.empty()) add_header("Authorization: " + request.authorization);
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, request.connect_ms);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, request.total_ms);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "kbuild");
  if (!request.user.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERNAME, request.user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, request.password.c_str());
  }
  if (request.verb == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, give_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, &upload);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.verb == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    // An answer whose Content-Length is over the limit is refused unread.
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, request.max_answer);
  }
  // Every answer's body is taken (an error page too), within the limit.
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, take_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &download);
  const CURLcode done = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  const std::string limit = std::to_string(request.max_answer);
  if (done == CURLE_FILESIZE_EXCEEDED || (done == CURLE_WRITE_ERROR && download.too_long))
    return {"large an answer longer than the " + limit +
                " bytes accepted (KBUILD_REMOTE_CACHE_MAX_ENTRY_BYTES)",
            ""};
  if (done == CURLE_OPERATION_TIMEDOUT)
    return {
        "timeout no answer within the timeout (the server answered too slowly; raise "
        "KBUILD_REMOTE_CACHE_TIMEOUT_MS or check the server)",
        ""};
  if (done != CURLE_OK) {
    std::string why = error[0] ? error : curl_easy_strerror(done);
    if (done == CURLE_COULDNT_CONNECT || done == CURLE_COULDNT_RESOLVE_HOST)
      why = "cannot connect: " + why;
    return {"fail " + redact_urls(printable_line(why)), ""};
  }
  // Only a 200's body is an entry: an error page is not kept.
  if (status != 200) download.body.clear();
  return {"http " + std::to_string(status), std::move(download.body)};
}

bool read_request(FrameReader& in, Request& request) {
  constexpr std::size_t kField = 1 << 16;
  std::string connect, total, max;
  if (!in.next(request.verb, 8) || !in.next(request.url, kField) ||
      !in.next(request.user, kField) || !in.next(request.password, kField) ||
      !in.next(request.authorization, kField) || !in.next(connect, 20) || !in.next(total, 20) ||
      !in.next(max, 20))
    return false;
  auto number = [](const std::string& text, auto& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && out > 0;
  };
  if (!number(connect, request.connect_ms) || !number(total, request.total_ms) ||
      !number(max, request.max_answer))
    return false;
  if (request.verb != "GET" && request.verb != "PUT" && request.verb != "HEAD") return false;
  // A body comes with a PUT alone, as long as an entry may be (max_answer).
  return in.next(request.body, static_cast<std::size_t>(request.max_answer));
}

}  // namespace

int serve_http_exchanges(int in, int out) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return 1;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return 1;
  FrameReader reader(in);
  Request request;
  while (read_request(reader, request)) {
    auto [status, body] = perform(curl.get(), request);
    if (!write_whole(out, http_frame(status)) ||
        !write_whole(out, std::to_string(body.size()) + "\n") || !write_whole(out, body))
      return 0;  // kbuild stopped listening
  }
  return 0;
}

}  // namespace kbuild
