// The remote cache's parts that need no server: the shareable key's
// machine-local parts (addresses: redis_client_test; keys: digest_test).
#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "../support/fake_file_clock.hpp"
#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "run/remote_cache.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/redis_client.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace {

// shareable_key's key, nothing when it has none (compared as values).
std::optional<std::string> remote_cache_test_key(const KeyInput& input,
                                                 const ShareableParts& parts = {}) {
  Result<std::string> key = shareable_key(input, system_file_system(), parts);
  if (!key) return std::nullopt;
  return *key;
}

}  // namespace

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
  auto a = remote_cache_test_key(input(dir / "a/g++"));
  REQUIRE(a);
  CHECK(remote_cache_test_key(input(dir / "b/other-name")) == a);
  env.set("PATH", "/elsewhere");  // machine-local: programs are named by content
  CHECK(remote_cache_test_key(input(dir / "a/g++")) == a);
  // A variable the compiler reads (CPATH) is in the entry's manifest, which
  // a reader checks in its own environment: not in the key.
  write_file(dir / "b/other-name", "#!/bin/sh\nexec g++-12 \"$@\"\n", true);  // another build
  CHECK(remote_cache_test_key(input(dir / "b/other-name")) != a);
  // The working directory counts only with debug info.
  auto before = std::filesystem::current_path();
  auto plain = remote_cache_test_key(input(dir / "a/g++"));
  auto debug = remote_cache_test_key(input(dir / "a/g++", {"-g"}));
  std::filesystem::current_path(dir.path());
  CHECK(remote_cache_test_key(input(dir / "a/g++")) == plain);
  CHECK(remote_cache_test_key(input(dir / "a/g++", {"-g"})) != debug);
  std::filesystem::current_path(before);
  CHECK_FALSE(remote_cache_test_key(input(dir / "missing/g++")));
}

TEST_CASE("the base-dir opt-in takes as alike only paths the compiler reads or writes",
          "[unit][remote][base-dir]") {
  TempDir one, two;
  for (const TempDir* d : {&one, &two}) write_file(*d / "k.cpp", "int f() { return 1; }\n");
  // The same build at two bases: what differs is each word's base.
  auto key = [](const TempDir& base, const std::vector<std::string>& words) {
    KeyInput in;
    in.argv = {"/usr/bin/g++", base / "k.cpp", "-o", "<work>.so"};
    in.argv.insert(in.argv.end(), words.begin(), words.end());
    in.output_index = 3;
    in.output = "k.so";
    in.sources = {base / "k.cpp"};
    in.programs = {"/usr/bin/g++"};
    ShareableParts parts;
    parts.base_dir = base.str();
    return remote_cache_test_key(in, parts);
  };
  // Include dirs, -include files and sources: the same key at either base.
  for (const std::string& form :
       {std::string("-I"), std::string("-isystem"), std::string("-include")}) {
    INFO(form);
    CHECK(key(one, {form, one / "inc"}) == key(two, {form, two / "inc"}));
  }
  CHECK(key(one, {"-I" + one / "inc"}) == key(two, {"-I" + two / "inc"}));
  // A macro's value reaches the binary as written: never alike.
  for (const std::string& form : {std::string("-Wp,-DWHERE="), std::string("--define-macro=WHERE="),
                                  std::string("-DWHERE="), std::string("-Wl,-rpath,")}) {
    INFO(form);
    CHECK(key(one, {form + one / "x"}) != key(two, {form + two / "x"}));
  }
  CHECK(key(one, {"-D", "WHERE=" + one / "x"}) != key(two, {"-D", "WHERE=" + two / "x"}));
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

TEST_CASE("remote cache address: flag, then variable, then the device file's default",
          "[unit][remote]") {
  Environment env;
  const DeviceRemoteCache device{"redis://from-device:3", "/cfg/x.json"};
  RemoteCacheSettings s = remote_cache_settings("", false, env, device);
  CHECK(s.address.host == "from-device");
  CHECK(s.from == "remote_cache in /cfg/x.json");
  env.set("KBUILD_REMOTE_CACHE", "redis://from-env:1");
  s = remote_cache_settings("", false, env, device);
  CHECK(s.address.host == "from-env");
  CHECK(s.from == "KBUILD_REMOTE_CACHE");
  s = remote_cache_settings("redis://from-flag:2", false, env, device);
  CHECK(s.address.host == "from-flag");
  CHECK(s.from == "--remote-cache");
  env.set("KBUILD_REMOTE_CACHE", "");  // empty counts as unset
  CHECK(remote_cache_settings("", false, env, device).address.host == "from-device");
  CHECK(remote_cache_settings("", false, env).url.empty());
}

namespace {
std::size_t remembered(const TrustedDir& cache) {
  Result<TrustedDir> programs = cache.sub("programs", false);
  return programs ? programs->list().size() : 0;
}
}  // namespace

namespace {
// program_hash's digest, or what failed (so a comparison shows why).
std::string remote_cache_test_hash(const FileSystem& files, const std::string& path,
                                   const TrustedDir* cache) {
  Result<std::string> hash = program_hash(files, path, cache);
  return hash ? *hash : "failed: " + hash.why();
}
}  // namespace

TEST_CASE("a program's hash is remembered by its identity; a change to its bytes is seen",
          "[unit][remote]") {
  TempDir dir;
  kbuild_test::FakeFileClock clock;
  Result<TrustedDir> cache = TrustedDir::open(dir / "cache", true);
  REQUIRE(cache);
  const std::string program = dir / "bin/cc";
  write_file(program, "#!/bin/sh\necho one\n", true);
  const std::string first = to_hex(content_hash("#!/bin/sh\necho one\n"));
  // Changed less than two seconds ago: hashed, not remembered (a change in
  // the same clock tick would keep its stamps).
  CHECK(remote_cache_test_hash(clock, program, &*cache) == first);
  CHECK(remembered(*cache) == 0);
  clock.advance();
  CHECK(remote_cache_test_hash(clock, program, &*cache) == first);
  CHECK(remembered(*cache) == 1);
  CHECK(remote_cache_test_hash(clock, program, &*cache) == first);
  // The same size, its mtime put back: the ctime still moves, so it is read again.
  struct stat st {};
  REQUIRE(::stat(program.c_str(), &st) == 0);
  write_file(program, "#!/bin/sh\necho two\n", true);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, program.c_str(), times, 0) == 0);
  CHECK(remote_cache_test_hash(clock, program, &*cache) ==
        to_hex(content_hash("#!/bin/sh\necho two\n")));
  // Through a link, the file it names; without a cache, hashed each time.
  std::filesystem::create_symlink(program, dir / "bin/link");
  CHECK(remote_cache_test_hash(clock, dir / "bin/link", nullptr) ==
        remote_cache_test_hash(clock, program, nullptr));
  CHECK_FALSE(program_hash(clock, dir / "bin/missing", &*cache));
}

TEST_CASE("a remembered program hash is used without reading the program", "[unit][remote]") {
  // /usr/bin/g++ has not changed for seconds: remembered on first use. A
  // planted answer under its identity shows that the next build reads only that.
  TempDir dir;
  Result<TrustedDir> cache = TrustedDir::open(dir / "cache", true);
  REQUIRE(cache);
  const std::string real = remote_cache_test_hash(system_file_system(), "/usr/bin/g++", &*cache);
  CHECK(real == to_hex(content_hash(
                    *read_whole_file(std::filesystem::canonical("/usr/bin/g++").string()))));
  Result<TrustedDir> programs = cache->sub("programs", false);
  REQUIRE(programs);
  REQUIRE(programs->list().size() == 1);
  const std::string planted(64, 'a');
  REQUIRE(programs->write_atomically(programs->list()[0], planted));
  CHECK(remote_cache_test_hash(system_file_system(), "/usr/bin/g++", &*cache) == planted);
  // A damaged record is not used.
  REQUIRE(programs->write_atomically(programs->list()[0], "not a hash"));
  CHECK(remote_cache_test_hash(system_file_system(), "/usr/bin/g++", &*cache) == real);
}

TEST_CASE("Redis addresses with a password (AUTH), never shown", "[unit][remote]") {
  auto p = parse_redis_url("redis://:s3cret@cache:6380/2");
  REQUIRE(p);
  CHECK(p->user.empty());
  CHECK(p->password == "s3cret");
  CHECK(p->host == "cache");
  CHECK(p->port == 6380);
  CHECK(p->db == 2);
  auto u = parse_redis_url("redis://builder:p%40ss:w/rd@[::1]:7000");
  REQUIRE(u);
  CHECK(u->user == "builder");
  CHECK(u->password == "p@ss:w/rd");
  CHECK(u->host == "::1");
  CHECK(u->port == 7000);
  // The whole userinfo: a user name can be a secret too.
  CHECK(redact_address("redis://builder:p%40ss:w/rd@[::1]:7000") == "redis://***@[::1]:7000");
  CHECK(redact_address("redis://:s3cret@cache:6380/2") == "redis://***@cache:6380/2");
  CHECK(redact_address("redis://cache:6380/2") == "redis://cache:6380/2");
  // A bad address's message never quotes the password.
  Environment env;
  try {
    remote_cache_settings("redis://:s3cret@cache:99999", false, env);
    FAIL("expected a usage error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
    CHECK(std::string(e.what()).find("redis://***@cache:99999") != std::string::npos);
  }
}

TEST_CASE("parse_remote_entry: the parts, or how the bytes are not an entry", "[unit][remote]") {
  const std::string entry = encode_remote_entry("k", "manifest", "frame");
  Result<RemoteEntry> parts = parse_remote_entry(entry);
  REQUIRE(parts);
  CHECK(parts->manifest == "manifest");
  CHECK(parts->compressed == "frame");
  CHECK(parts->signature.empty());
  CHECK(remote_digest_holds("k", *parts));

  Result<RemoteEntry> foreign = parse_remote_entry("GIF89a");
  REQUIRE_FALSE(foreign);
  CHECK(foreign.why() == "not a kbuild remote entry (no kbuild-remote-entry-4 header)");
  Result<RemoteEntry> torn = parse_remote_entry(entry.substr(0, entry.size() - 1));
  REQUIRE_FALSE(torn);
  CHECK(torn.why() == "truncated in its digest");
  Result<RemoteEntry> short_manifest = parse_remote_entry(entry.substr(0, 30));
  REQUIRE_FALSE(short_manifest);
  CHECK(short_manifest.why() == "truncated in its manifest");
  Result<RemoteEntry> trailing = parse_remote_entry(entry + "xyz");
  REQUIRE_FALSE(trailing);
  CHECK(trailing.why() == "3 bytes after its digest, which are not a signature");
}
