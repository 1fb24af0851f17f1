#include "util/remote_address.hpp"

#include <charconv>

#include "util/redis_client.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

constexpr const char* kHttpForms = "give http://HOST[:PORT]/PATH or https://HOST[:PORT]/PATH";

// "HOST[:PORT]" (a bracketed IPv6 host included) is well formed.
Status check_host(std::string_view authority) {
  const std::size_t host_end = authority.rfind(']');
  const std::size_t colon = authority.rfind(':');
  std::string_view host = authority;
  if (colon != std::string_view::npos && (host_end == std::string_view::npos || colon > host_end)) {
    const std::string_view digits = authority.substr(colon + 1);
    int port = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || port <= 0 ||
        port > 65535)
      return Failure{std::string("bad port; ") + kHttpForms};
    host = authority.substr(0, colon);
  }
  if (host.empty() || host == "[]") return Failure{std::string("no host; ") + kHttpForms};
  return ok();
}

}  // namespace

bool is_http_address(std::string_view url) {
  const std::string_view scheme = address_parts(url).scheme;
  return scheme == "http://" || scheme == "https://";
}

Result<HttpAddress> parse_http_url(const std::string& url) {
  // Split as redact_address splits it: what is shown hidden is what is sent.
  const AddressParts parts = address_parts(url);
  if (parts.scheme != "http://" && parts.scheme != "https://")
    return Failure{std::string("not an http:// or https:// address; ") + kHttpForms};
  HttpAddress address;
  if (parts.userinfo) {
    const std::size_t colon = parts.userinfo->find(':');
    auto user = percent_decoded(parts.userinfo->substr(0, colon));
    auto password = colon == std::string_view::npos
                        ? std::optional<std::string>("")
                        : percent_decoded(parts.userinfo->substr(colon + 1));
    if (!user || !password)
      return Failure{std::string("a bad %XX escape in the user or password; ") + kHttpForms};
    if (user->empty())
      return Failure{"no user before the password; give " + std::string(parts.scheme) +
                     "USER:PASSWORD@HOST[:PORT]/PATH"};
    address.user = *user;
    address.password = *password;
  }
  std::string_view rest = parts.rest;
  if (rest.find_first_of("?#") != std::string_view::npos)
    return Failure{std::string("a query or fragment (entries are PATH/KEY); ") + kHttpForms};
  if (rest.find_first_of(" \t\r\n") != std::string_view::npos)
    return Failure{std::string("a blank in the address; ") + kHttpForms};
  const std::size_t slash = rest.find('/');
  if (Status host = check_host(rest.substr(0, slash)); !host) return Failure{host.why()};
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  address.base = std::string(parts.scheme) + std::string(rest);
  return address;
}

Status check_remote_address(const std::string& url) {
  if (is_http_address(url)) {
    Result<HttpAddress> http = parse_http_url(url);
    return http ? ok() : Status(Failure{http.why()});
  }
  const std::string_view scheme = address_parts(url).scheme;
  if (scheme != "redis://" && scheme != "unix://")
    return Failure{
        "not a redis://, unix://, http:// or https:// address; give redis://HOST:PORT[/DB], "
        "unix:///PATH or http(s)://HOST[:PORT]/PATH"};
  Result<RedisAddress> redis = parse_redis_url(url);
  return redis ? ok() : Status(Failure{redis.why()});
}

}  // namespace kbuild
