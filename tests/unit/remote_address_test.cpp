// The remote cache's addresses of every backend (util/remote_address) and
// the HTTP backend's entry URLs (run/http_store): split by the one splitter
// redaction shows, credentials taken whole, what is wrong said.
#include <catch2/catch.hpp>

#include "run/http_store.hpp"
#include "util/remote_address.hpp"
#include "util/text.hpp"

using namespace kbuild;

TEST_CASE("parse_http_url: the base, the credentials, the port", "[unit][remote_address]") {
  Result<HttpAddress> plain = parse_http_url("http://cache.internal:8080/kbuild/");
  REQUIRE(plain);
  CHECK(plain->base == "http://cache.internal:8080/kbuild");
  CHECK(plain->user.empty());
  Result<HttpAddress> secret = parse_http_url("https://ci:pa%40ss w/rd@[::1]/c");
  REQUIRE(secret);
  CHECK(secret->base == "https://[::1]/c");
  CHECK(secret->user == "ci");
  CHECK(secret->password == "pa@ss w/rd");
  // What is sent as credentials is what redaction hides.
  CHECK(redact_address("https://ci:pa%40ss w/rd@[::1]/c") == "https://***@[::1]/c");
  Result<HttpAddress> bare = parse_http_url("http://host");
  REQUIRE(bare);
  CHECK(bare->base == "http://host");
}

TEST_CASE("parse_http_url: what is wrong, never the password", "[unit][remote_address]") {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"http://", "no host"},
      {"http://:8080/c", "no host"},
      {"http://host:0/c", "bad port"},
      {"http://host:65536/c", "bad port"},
      {"http://host:x/c", "bad port"},
      {"http://host/c?x=1", "a query or fragment"},
      {"http://:s3cret@host/c", "no user before the password"},
      {"http://u:%zz@host/c", "a bad %XX escape"},
  };
  for (const auto& [url, words] : bad) {
    Result<HttpAddress> parsed = parse_http_url(url);
    INFO(url);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.why().find(words) != std::string::npos);
    CHECK(parsed.why().find("s3cret") == std::string::npos);
  }
}

TEST_CASE("check_remote_address: every backend's form, and the forms to give",
          "[unit][remote_address]") {
  CHECK(check_remote_address("redis://cache:6379/2"));
  CHECK(check_remote_address("unix:///run/redis.sock"));
  CHECK(check_remote_address("http://cache:8080/kbuild"));
  CHECK(check_remote_address("https://cache/kbuild"));
  Status ftp = check_remote_address("ftp://cache:6379");
  REQUIRE_FALSE(ftp);
  CHECK(ftp.why().find("not a redis://, unix://, http:// or https:// address") !=
        std::string::npos);
  CHECK(ftp.why().find("http(s)://HOST[:PORT]/PATH") != std::string::npos);
  Status redis = check_remote_address("redis://host:0");
  REQUIRE_FALSE(redis);
  CHECK(redis.why().find("bad port") != std::string::npos);
}

TEST_CASE("an HTTP entry's URL is PATH/KEY, the key escaped", "[unit][remote_address]") {
  HttpSettings settings;
  settings.address = *parse_http_url("http://cache:8080/kbuild/");
  HttpStore store(settings);
  CHECK(store.entry_url("kbuild-entry-4-0af9") == "http://cache:8080/kbuild/kbuild-entry-4-0af9");
  CHECK(store.entry_url("a/b c") == "http://cache:8080/kbuild/a%2Fb%20c");
  CHECK_FALSE(store.leases());
}
