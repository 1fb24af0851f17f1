// The remote cache on an HTTP server (ccache's http: backend): entries are
// PATH/KEY, read with GET, written with PUT, looked for with HEAD; any
// WebDAV-capable server (nginx's dav_methods PUT) or object-store gateway
// serves them. HTTP has no atomic set-if-absent: no leases.
//
// The exchanges go through libcurl in a helper process, kbuild-http
// (http_transfer), started at the first exchange and kept for the build:
// kbuild is linked static-pie and Debian's libcurl cannot be (its Kerberos
// and LDAP have no static archives), and a static program must not dlopen
// a library that brings its own libc. kbuild gives each exchange one
// deadline and ends the helper when it passes or an interrupt comes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "run/remote_store.hpp"
#include "util/process.hpp"
#include "util/remote_address.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

// The helper's protocol, both ways a sequence of frames: the length in
// decimal, a newline, the bytes. A request is 9 frames (verb, URL, user,
// password, Authorization header value, connect and whole-exchange
// time-outs in ms, the longest answer accepted, the body); an answer 2 (the
// HTTP status as "http 200", or a failure, its kind first: "timeout WHY",
// "large WHY" (longer than accepted) or "fail WHY"; the body).
inline std::string http_frame(std::string_view bytes) {
  std::string out = std::to_string(bytes.size());
  out += '\n';
  out += bytes;
  return out;
}
inline constexpr std::size_t kHttpRequestFrames = 9;

struct HttpSettings {
  HttpAddress address;
  std::string authorization;  // an Authorization header's value ("Bearer ..."), or ""
  std::chrono::milliseconds connect{500}, operation{2000};
  std::size_t max_answer = std::size_t(256) << 20;  // the longest body a GET accepts
};

class HttpStore : public RemoteStore {
 public:
  // The helper is started through `processes`.
  explicit HttpStore(HttpSettings settings, ProcessRunner& processes = real_processes())
      : settings_(std::move(settings)), processes_(processes) {}
  ~HttpStore() override;
  HttpStore(const HttpStore&) = delete;
  HttpStore& operator=(const HttpStore&) = delete;

  // The entry of shared key `key` is PATH/kbuild-entry-4-KEY (cache_key.hpp:
  // http_entry_name).
  ServerResult<std::optional<FetchedEntry>> get(const std::string& key) override;
  ServerResult<std::size_t> put(const std::string& key, const std::string& bytes) override;
  ServerResult<bool> exists(const std::string& key) override;
  bool removes() const override { return false; }  // no DELETE: a new PUT replaces
  ServerStatus remove_if(const std::string&, const std::string&) override { return Done{}; }
  bool leases() const override { return false; }
  ServerResult<bool> take_lease(const std::string&, const std::string&,
                                std::chrono::milliseconds) override {
    return true;
  }
  ServerResult<bool> lease_held(const std::string&) override { return false; }
  ServerStatus release_lease(const std::string&, const std::string&) override { return Done{}; }

  // The URL of the entry named `name`: PATH/NAME, the name %XX escaped but
  // for letters, digits, '-', '.' and '_'.
  std::string entry_url(const std::string& name) const;

 private:
  struct Answer {
    int status = 0;
    std::string body;
  };
  // One request and its whole answer by one deadline; a failure ends the
  // helper (the next exchange starts another).
  ServerResult<Answer> exchange(const char* verb, const std::string& name, std::string_view body);
  Status start_helper();
  void stop_helper();

  HttpSettings settings_;
  ProcessRunner& processes_;
  Coprocess helper_;     // kbuild-http, started at the first exchange
  std::string pending_;  // read from the helper, not yet taken
};

}  // namespace kbuild
