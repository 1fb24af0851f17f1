// The remote cache's parts that need no server: the shareable key's
// machine-local parts (addresses: redis_client_test; keys: signing_test).
#include <catch2/catch.hpp>
#include <filesystem>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "kbuild/remote_cache.hpp"
#include "kbuild/signing.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

TEST_CASE("the shareable key names the compiler by content, not path or mtime", "[unit][remote]") {
  TempDir dir;
  write_file(dir / "a/g++", "#!/bin/sh\nexec g++ \"$@\"\n", true);
  write_file(dir / "b/other-name", "#!/bin/sh\nexec g++ \"$@\"\n", true);
  write_file(dir / "k.cpp", "int f() { return 1; }\n");
  Environment env;
  auto input = [&](const std::string& compiler, std::vector<std::string> flags = {}) {
    KeyInput in;
    in.argv = {compiler, "-O2", dir / "k.cpp", "-o", "<work>.so"};
    in.argv.insert(in.argv.end(), flags.begin(), flags.end());
    in.output_index = in.argv.size();
    in.output = "k.so";
    in.sources = {dir / "k.cpp"};
    in.programs = {compiler};
    return in;
  };
  auto a = shareable_key(input(dir / "a/g++"), env);
  REQUIRE(a);
  CHECK(shareable_key(input(dir / "b/other-name"), env) == a);
  env.set("PATH", "/elsewhere");  // machine-local: programs are named by content
  CHECK(shareable_key(input(dir / "a/g++"), env) == a);
  env.set("CPATH", "/opt/include");  // changes what the compiler reads
  CHECK(shareable_key(input(dir / "a/g++"), env) != a);
  env.unset("CPATH");
  write_file(dir / "b/other-name", "#!/bin/sh\nexec g++-12 \"$@\"\n", true);  // another build
  CHECK(shareable_key(input(dir / "b/other-name"), env) != a);
  // The working directory counts only with debug info.
  auto before = std::filesystem::current_path();
  auto plain = shareable_key(input(dir / "a/g++"), env);
  auto debug = shareable_key(input(dir / "a/g++", {"-g"}), env);
  std::filesystem::current_path(dir.path());
  CHECK(shareable_key(input(dir / "a/g++"), env) == plain);
  CHECK(shareable_key(input(dir / "a/g++", {"-g"}), env) != debug);
  std::filesystem::current_path(before);
  CHECK_FALSE(shareable_key(input(dir / "missing/g++"), env));
}

TEST_CASE("remote cache settings: flag before variable, keys checked", "[unit][remote]") {
  Environment env;
  env.set("KBUILD_REMOTE_CACHE", "redis://from-env:1");
  CHECK(remote_cache_settings("", false, env).address.host == "from-env");
  CHECK(remote_cache_settings("redis://from-flag:2", true, env).address.host == "from-flag");
  CHECK(remote_cache_settings("redis://from-flag:2", true, env).readonly);
  SigningKeys keys = generate_signing_keys();
  env.set("KBUILD_REMOTE_CACHE_SIGNING_KEY", keys.secret_hex);
  RemoteCacheSettings s = remote_cache_settings("", false, env);
  CHECK(to_hex(s.verify_key) == keys.public_hex);  // a writer verifies its own entries
  env.set("KBUILD_REMOTE_CACHE_VERIFY_KEY", generate_signing_keys().public_hex);
  CHECK_THROWS_AS(remote_cache_settings("", false, env), Error);
  Environment none;
  CHECK(remote_cache_settings("", false, none).url.empty());
}
