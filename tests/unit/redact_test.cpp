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
