// The remote cache's address, whatever its server: redis:// and unix://
// (redis_client's parse_redis_url), http:// and https:// (parsed here). Every
// form is split by text's address_parts, the split redact_address shows, so
// what a message hides is what the client sends as credentials.
#pragma once

#include <string>
#include <string_view>

#include "kbuild/error.hpp"

namespace kbuild {

// http(s)://[USER:PASSWORD@]HOST[:PORT][/PATH]: entries are PATH/KEY.
struct HttpAddress {
  std::string base;            // SCHEME://HOST[:PORT][/PATH], no userinfo, no trailing '/'
  std::string user, password;  // %XX decoded; sent as HTTP basic authentication
};

// Whether `url` names an HTTP server (http:// or https://).
bool is_http_address(std::string_view url);

// The address, or a Failure saying what is wrong with `url` (never quoting
// its userinfo).
Result<HttpAddress> parse_http_url(const std::string& url);

// ok() when `url` is an address some backend reads, else what is wrong and
// the forms to give (a device file's address, checked when it is loaded).
Status check_remote_address(const std::string& url);

}  // namespace kbuild
