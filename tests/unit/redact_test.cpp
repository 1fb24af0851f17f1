// redact: what every message, report and listing shows of a secret.
#include "util/text.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

TEST_CASE("a URL's whole userinfo is masked, wherever it sits in a text", "[unit][redact]") {
  CHECK(redact_urls("redis://:pw@cache:6379/2") == "redis://***@cache:6379/2");
  CHECK(redact_urls("redis://user:pw@cache") == "redis://***@cache");
  CHECK(redact_urls("redis://PASSWORD@cache") == "redis://***@cache");  // the colon forgotten
  CHECK(redact_urls("redis://u:p@ss/w@rd@cache:1") == "redis://***@cache:1");  // last '@'
  CHECK(redact_urls("redis://cache:6379") == "redis://cache:6379");
  CHECK(redact_urls("unix:///run/redis.sock?db=2") == "unix:///run/redis.sock?db=2");
  CHECK(redact_urls("--remote-cache=redis://:pw@h:1") == "--remote-cache=redis://***@h:1");
  CHECK(redact_urls("remote cache 'redis://:a@h' and \"https://t:k@example.com/x\" failed") ==
        "remote cache 'redis://***@h' and \"https://***@example.com/x\" failed");
  CHECK(redact_urls("two: redis://:a@h redis://:b@i") == "two: redis://***@h redis://***@i");
  CHECK(redact_urls("no scheme user@host: kept") == "no scheme user@host: kept");
  CHECK(redact_urls("") == "");
  CHECK(redact_urls("ends in ://") == "ends in ://");
  CHECK(redact_urls("ends in ://@") == "ends in ://***@");
}

TEST_CASE("keys, passwords and tokens are shown as set, other values with URLs masked",
          "[unit][redact]") {
  for (const char* name : {"KBUILD_REMOTE_CACHE_SIGNING_KEY", "KBUILD_REMOTE_CACHE_VERIFY_KEY",
                           "REDIS_PASSWORD", "CI_JOB_TOKEN", "MY_SECRET"})
    CHECK(shown_value(name, "abc123") == "set");
  CHECK_FALSE(is_secret_variable("KBUILD_REMOTE_CACHE"));
  CHECK(shown_value("KBUILD_REMOTE_CACHE", "redis://:pw@h:1") == "redis://***@h:1");
  CHECK(shown_value("PATH", "/usr/bin:/bin") == "/usr/bin:/bin");
}

TEST_CASE("an address is read whole: its userinfo runs to the last '@', blanks and all",
          "[unit][redact]") {
  // As the client reads it: AUTH gets "correct horse", so none of it is shown.
  CHECK(redact_address("redis://:correct horse@cache:6379") == "redis://***@cache:6379");
  CHECK(redact_address("redis://user:a b/c:d@e@[::1]:1/2") == "redis://***@[::1]:1/2");
  CHECK(redact_address("redis://cache:6379/2") == "redis://cache:6379/2");
  // Mistyped: what looks like a scheme is kept, what follows it to the last '@' hidden.
  CHECK(redact_address("redis:/:PW@cache:1") == "redis:/***@cache:1");
  CHECK(redact_address("redis:/:Pa/ss@h:1") == "redis:/***@h:1");
  CHECK(redact_address("redis:PW@cache:1") == "redis:***@cache:1");
  CHECK(redact_address("rediss://:PW@cache:1") == "rediss://***@cache:1");
  CHECK(redact_address("REDIS:///:PW@cache:1") == "REDIS://***@cache:1");
  CHECK(redact_address(":PW@cache:1") == "***@cache:1");
  CHECK(redact_address(" redis://:PW@cache:1") == "***@cache:1");
  CHECK(redact_address("1redis://:PW@cache:1") == "***@cache:1");
  // Any URL-like address the same way (a later HTTP backend's too).
  CHECK(redact_address("https://user:p w@cache.example/v1/x") == "https://***@cache.example/v1/x");
  CHECK(redact_address("http://cache.example/a@b") == "http://***@b");  // more hidden, never less
  // unix:///PATH has no userinfo: its path is shown whole; one that does not
  // parse hides the same part as any other.
  CHECK(redact_address("unix:///run/a@b/redis.sock?db=2") == "unix:///run/a@b/redis.sock?db=2");
  CHECK(redact_address("unix://:PW@/run/redis.sock") == "unix://***@/run/redis.sock");
  CHECK(redact_address("") == "");
  CHECK(redact_address("@") == "***@");
}

TEST_CASE("address_parts splits an address as the Redis client reads it", "[unit][redact]") {
  AddressParts parts = address_parts("redis://u:p w@h:1/2");
  CHECK(parts.scheme == "redis://");
  REQUIRE(parts.userinfo);
  CHECK(*parts.userinfo == "u:p w");
  CHECK(parts.rest == "h:1/2");
  parts = address_parts("redis:/:x@h");
  CHECK(parts.scheme == "redis:/");
  CHECK(parts.userinfo == std::string_view(":x"));
  parts = address_parts("unix:///s@ck");
  CHECK(parts.scheme == "unix://");
  CHECK_FALSE(parts.userinfo);
  CHECK(parts.rest == "/s@ck");
  parts = address_parts("host:6379");
  CHECK(parts.scheme == "host:");
  CHECK_FALSE(parts.userinfo);
}

TEST_CASE("a word or a value that is an address is read to its end", "[unit][redact]") {
  CHECK(redact_value("redis://:correct horse@h:1") == "redis://***@h:1");
  CHECK(redact_value("--remote-cache=redis://:correct horse@h:1") ==
        "--remote-cache=redis://***@h:1");
  CHECK(redact_value("redis:/:PW@h:1") == "redis:/***@h:1");
  CHECK(redact_value("-DURL=redis:PW@h") == "-DURL=redis:***@h");
  CHECK(redact_value("-Wl,-rpath,/opt/lib") == "-Wl,-rpath,/opt/lib");
  CHECK(redact_value("/usr/bin:/bin") == "/usr/bin:/bin");
  CHECK(redact_value("user@host") == "user@host");
  CHECK(redact_value("see redis://:pw@h") == "see redis://***@h");  // not an address: as text
  // A variable that holds an address is one, whatever it looks like.
  CHECK(shown_value("KBUILD_REMOTE_CACHE", "redis://:correct horse@h:1") == "redis://***@h:1");
  CHECK(shown_value("KBUILD_REMOTE_CACHE", ":PW@h:1") == "***@h:1");
  CHECK(shown_value("CACHE_URL", "h t@x") == "***@x");
  CHECK(shown_value("OTHER", "redis:/:PW@h:1") == "redis:/***@h:1");
}
