// The output cache on its own: keys, store and fetch (each entry's manifest
// checked), counts and eviction; no compiler runs here.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include "../support/cbor.hpp"
#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "run/input_manifest.hpp"
#include "run/observation.hpp"
#include "run/output_cache.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/process.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using kbuild_test::parse_manifest;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::to_cbor;
using kbuild_test::write_file;

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

struct timespec file_time_now() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

// A kernel source and a header in a scratch tree, and a cache over them.
struct OutputCacheFixture {
  TempDir tmp;
  Environment env;
  OutputCache cache;
  OutputCacheFixture() {
    fs::create_directories(tmp / "src");
    fs::create_directories(tmp / "inc");
    write_file(tmp / "src/k.cpp", "#include \"a.h\"\nint f() { return A; }\n");
    write_file(tmp / "inc/a.h", "#define A 1\n");
    cache = OutputCache::open(CacheSettings{true, tmp / "cache", 1u << 20}).cache;
    REQUIRE(cache.enabled());
  }
  KeyInput input() const {
    KeyInput in;
    in.argv = {"/usr/bin/g++", tmp / "src/k.cpp", "-I" + tmp / "inc", "-o", tmp / "k.so"};
    in.output_index = 4;
    in.output = tmp / "k.so";
    in.sources = {tmp / "src/k.cpp"};
    return in;
  }
  CacheKey key(const KeyInput& in) {
    auto k = cache_key(in, kbuild::system_file_system());
    REQUIRE(k);
    return *k;
  }
  // What the compiler was observed to do: read the source and inc/a.h,
  // after looking for a.h beside the source first.
  BuildInputs read() const {
    Observation observed;
    observed.reported = true;
    observed.read = {tmp / "src/k.cpp", tmp / "inc/a.h"};
    observed.absent = {tmp / "src/a.h"};
    ObservedBuild build;
    build.env = &env;
    build.started = file_time_now();
    Result<std::string> manifest = observed_manifest(observed, build);
    REQUIRE(manifest);
    // As run_build stores it: with what the compiler printed (nothing).
    manifest = with_replay(*manifest, CompilerOutput{}, std::nullopt);
    REQUIRE(manifest);
    BuildInputs inputs;
    inputs.manifest = *manifest;
    inputs.started = build.started;
    return inputs;
  }
  // Stores `bytes` as the output of input().
  Status store(const std::string& bytes, const KeyInput& in) {
    write_file(tmp / "built", bytes);
    int fd = ::open((tmp / "built").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    Status stored = cache.store(key(in), fd, in, read());
    ::close(fd);
    return stored;
  }
  // What a fetch of input()'s key writes; nullopt on a miss.
  std::optional<std::string> fetch(const KeyInput& in) {
    const std::string dest = tmp / ("fetched" + unique_suffix());
    int fd = ::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    REQUIRE(fd >= 0);
    bool hit = cache.fetch(key(in).hex, env, fd);
    ::close(fd);
    std::string bytes = read_file(dest);
    fs::remove(dest);
    if (!hit) return std::nullopt;
    return bytes;
  }
  fs::path entry(const KeyInput& in) {
    std::string hex = key(in).hex;
    return tmp.path() / "cache/objects" / hex.substr(0, 2) / hex;
  }
};

}  // namespace

TEST_CASE("cache_key: the same build gives the same key; each input changes it",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  const KeyInput base = f.input();
  const CacheKey k = f.key(base);
  CHECK(k.hex.size() == 40);
  CHECK(k.source_digest == Strings{digest_hex(read_file(f.tmp / "src/k.cpp"))});
  CHECK(f.key(base).hex == k.hex);

  KeyInput elsewhere = base;  // only the output's directory differs
  elsewhere.argv[4] = elsewhere.output = f.tmp / "other/k.so";
  CHECK(f.key(elsewhere).hex == k.hex);
  KeyInput ext = base;
  ext.argv[4] = ext.output = f.tmp / "k.o";
  CHECK(f.key(ext).hex != k.hex);
  KeyInput flag = base;
  flag.argv.push_back("-O2");
  CHECK(f.key(flag).hex != k.hex);
  KeyInput extra = base;
  extra.extra = {"pch identity"};
  CHECK(f.key(extra).hex != k.hex);

  // Fields are length-prefixed: moving a boundary changes the key.
  KeyInput split1 = base, split2 = base;
  split1.extra = {"ab", "c"};
  split2.extra = {"a", "bc"};
  CHECK(f.key(split1).hex != f.key(split2).hex);

  write_file(f.tmp / "src/k.cpp", "int f() { return 2; }\n");
  CHECK(f.key(base).hex != k.hex);
}

TEST_CASE("cache_key covers the compiler's stamp; a missing source has no key",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  write_file(f.tmp / "fake-g++", "#!/bin/sh\n", true);
  KeyInput in = f.input();
  in.programs = {f.tmp / "fake-g++"};
  const std::string before = f.key(in).hex;
  write_file(f.tmp / "fake-g++", "#!/bin/sh\n# another build\n", true);
  CHECK(f.key(in).hex != before);

  KeyInput no_source = f.input();
  no_source.sources = {f.tmp / "missing.cpp"};
  Result<CacheKey> unkeyed = cache_key(no_source, kbuild::system_file_system());
  REQUIRE_FALSE(unkeyed);
  CHECK(unkeyed.why() == f.tmp / "missing.cpp" + ": No such file or directory");
}

TEST_CASE("a variable the compiler read must have the same value for a hit",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  const KeyInput in = f.input();
  f.env.set("CPATH", "/one");
  Observation observed;
  observed.reported = true;
  observed.read = {f.tmp / "src/k.cpp"};
  observed.variables = {{"CPATH", std::string("/one")}, {"LD_RUN_PATH", std::nullopt}};
  ObservedBuild build;
  build.env = &f.env;
  build.started = file_time_now();
  Result<std::string> manifest = observed_manifest(observed, build);
  REQUIRE(manifest);
  manifest = with_replay(*manifest, CompilerOutput{}, std::nullopt);  // as run_build stores it
  REQUIRE(manifest);
  BuildInputs inputs;
  inputs.manifest = *manifest;
  write_file(f.tmp / "built", "out");
  int fd = ::open((f.tmp / "built").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(f.cache.store(f.key(in), fd, in, inputs));
  ::close(fd);
  CHECK(f.fetch(in) == "out");
  f.env.set("CPATH", "/two");
  CHECK_FALSE(f.fetch(in));
  f.env.set("CPATH", "/one");
  f.env.set("LD_RUN_PATH", "/opt/lib");  // unset when the compiler asked
  CHECK_FALSE(f.fetch(in));
  f.env.unset("LD_RUN_PATH");
  CHECK(f.fetch(in) == "out");
}

TEST_CASE("a stored output is fetched whole; a changed header is a miss", "[unit][output_cache]") {
  OutputCacheFixture f;
  const KeyInput in = f.input();
  CHECK_FALSE(f.fetch(in));
  const std::string elf(
      "\x7f"
      "ELF binary\0bytes",
      17);
  REQUIRE(f.store(elf, in));
  CHECK(f.fetch(in) == elf);
  CHECK(f.cache.stats().entries == 1);
  CHECK(f.cache.stats().bytes == elf.size());
  write_file(f.tmp / "inc/a.h", "#define A 2\n");
  CHECK_FALSE(f.fetch(in));
  // Stored again with the new header: the old entry is replaced.
  REQUIRE(f.store("second", in));
  CHECK(f.fetch(in) == "second");
  CHECK(f.cache.stats().entries == 1);
  CHECK(fs::is_empty(f.tmp / "cache/tmp"));
}

TEST_CASE("a header that would now shadow the one read makes a hit a miss",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  const KeyInput in = f.input();
  REQUIRE(f.store("out", in));
  REQUIRE(f.fetch(in));
  // Beside the source comes first for a quoted include.
  write_file(f.tmp / "src/a.h", "#define A 3\n");
  CHECK_FALSE(f.fetch(in));
  fs::remove(f.tmp / "src/a.h");
  CHECK(f.fetch(in) == "out");
}

TEST_CASE("a damaged entry is never served and is removed", "[unit][output_cache]") {
  OutputCacheFixture f;
  const KeyInput in = f.input();
  REQUIRE(f.store("0123456789", in));
  write_file(f.entry(in) / "output", "0123456780");  // same size, other bytes
  CHECK_FALSE(f.fetch(in));
  CHECK_FALSE(fs::exists(f.entry(in)));

  REQUIRE(f.store("0123456789", in));
  write_file(f.entry(in) / "output", "01234");
  CHECK_FALSE(f.fetch(in));
  CHECK_FALSE(fs::exists(f.entry(in)));

  REQUIRE(f.store("0123456789", in));
  write_file(f.entry(in) / "manifest", "not CBOR");
  CHECK_FALSE(f.fetch(in));

  REQUIRE(f.store("0123456789", in));
  fs::remove(f.entry(in) / "output");
  fs::create_symlink(f.tmp / "src/k.cpp", f.entry(in) / "output");
  CHECK_FALSE(f.fetch(in));
}

TEST_CASE("entries are stored as zstd frames, and read whichever way they were stored",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  f.cache = OutputCache::open(CacheSettings{true, f.tmp / "cache", 1u << 20, true}).cache;
  const KeyInput in = f.input();
  std::string library;
  for (int i = 0; i < 4096; ++i) library += "\177ELF section " + std::to_string(i % 64) + "\n";
  REQUIRE(f.cache.compresses());
  REQUIRE(f.store(library, in));
  const std::string frame = read_file(f.entry(in) / "output");
  CHECK(frame.rfind("\x28\xb5\x2f\xfd", 0) == 0);  // zstd's magic
  CHECK(frame.size() * 10 < library.size());
  CHECK(f.cache.stats().bytes == frame.size());  // eviction counts what the disk holds
  CHECK(f.fetch(in) == library);

  // One that does not (the default) reads it, and writes plain outputs...
  OutputCache plain =
      OutputCache::open(CacheSettings{true, f.tmp / "cache", 1u << 20, false}).cache;
  std::swap(plain, f.cache);
  CHECK(f.fetch(in) == library);
  REQUIRE(f.store(library, in));
  CHECK(read_file(f.entry(in) / "output") == library);
  // ...which a compressing one reads.
  std::swap(plain, f.cache);
  CHECK(f.fetch(in) == library);

  // A frame of other bytes of the same size: never served, removed.
  REQUIRE(f.store("0123456789", in));
  write_file(f.entry(in) / "output", zstd_compress("0123456780"));
  CHECK_FALSE(f.fetch(in));
  CHECK_FALSE(fs::exists(f.entry(in)));
  // Cut short: the same.
  REQUIRE(f.store(library, in));
  write_file(f.entry(in) / "output", frame.substr(0, frame.size() / 2));
  CHECK_FALSE(f.fetch(in));
  CHECK_FALSE(fs::exists(f.entry(in)));
}

TEST_CASE("a hit whose output cannot be written (a full disk) keeps its valid entry",
          "[unit][output_cache]") {
  const bool compressed = GENERATE(false, true);
  INFO("compressed: " << compressed);
  OutputCacheFixture f;
  f.cache = OutputCache::open(CacheSettings{true, f.tmp / "cache", 1u << 20, compressed}).cache;
  const KeyInput in = f.input();
  std::string library;
  for (int i = 0; i < 4096; ++i) library += "\177ELF section " + std::to_string(i % 64) + "\n";
  REQUIRE(f.store(library, in));
  // /dev/full: every write fails with ENOSPC, as on a full output disk.
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(full >= 0);
  CHECK_FALSE(f.cache.fetch(f.key(in).hex, f.env, full));
  ::close(full);
  CHECK(fs::exists(f.entry(in) / "output"));  // the entry's own bytes are right: kept
  CHECK(f.fetch(in) == library);
}

TEST_CASE("entries are stored compressed only with KBUILD_CACHE_COMPRESS=1",
          "[unit][output_cache]") {
  Environment env;
  CHECK_FALSE(cache_compression(env));
  CHECK_FALSE(OutputCache::open(CacheSettings{}).cache.compresses());
  env.set("KBUILD_CACHE_COMPRESS", "1");
  CHECK(cache_compression(env));
  env.set("KBUILD_CACHE_COMPRESS", "0");
  CHECK_FALSE(cache_compression(env));
}

TEST_CASE("store refuses a source edited while the compiler ran, and leaves nothing",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  const KeyInput in = f.input();
  const CacheKey key = f.key(in);
  write_file(f.tmp / "src/k.cpp", "edited meanwhile\n");
  write_file(f.tmp / "built", "out");
  int fd = ::open((f.tmp / "built").c_str(), O_RDONLY);
  Status stored = f.cache.store(key, fd, in, f.read());
  ::close(fd);
  REQUIRE_FALSE(stored);
  CHECK(stored.why() == f.tmp / "src/k.cpp" + " changed during the build");
  CHECK(f.cache.stats().entries == 0);
}

TEST_CASE("an observed manifest refuses a header changed after the build started",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  Observation observed;
  observed.reported = true;
  observed.read = {f.tmp / "src/k.cpp", f.tmp / "inc/a.h"};
  ObservedBuild build;
  build.env = &f.env;
  build.started = file_time_now();
  build.started.tv_sec -= 3600;  // the header is newer than the build
  Result<std::string> manifest = observed_manifest(observed, build);
  REQUIRE_FALSE(manifest);
  CHECK(manifest.why().find("changed during the build") != std::string::npos);
}

TEST_CASE("a link's entry is a miss when a library looked for and not found appears",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  fs::create_directories(f.tmp / "lib");
  const KeyInput in = f.input();
  Observation observed;
  observed.reported = true;
  observed.read = {f.tmp / "src/k.cpp"};
  observed.absent = {f.tmp / "lib/libacc.so", f.tmp / "lib/libacc.a"};
  ObservedBuild build;
  build.env = &f.env;
  build.started = file_time_now();
  Result<std::string> manifest = observed_manifest(observed, build);
  REQUIRE(manifest);
  manifest = with_replay(*manifest, CompilerOutput{}, std::nullopt);  // as run_build stores it
  REQUIRE(manifest);
  BuildInputs inputs;
  inputs.manifest = *manifest;
  write_file(f.tmp / "built", "linked");
  int fd = ::open((f.tmp / "built").c_str(), O_RDONLY);
  REQUIRE(f.cache.store(f.key(in), fd, in, inputs));
  ::close(fd);
  CHECK(f.fetch(in) == "linked");
  write_file(f.tmp / "lib/libacc.so", "a library appeared");
  CHECK_FALSE(f.fetch(in));
}

TEST_CASE("open: disabled, none named, missing without create, untrusted", "[unit][output_cache]") {
  TempDir tmp;
  OpenedCache opened_off = OutputCache::open(CacheSettings{false, tmp / "c", 1});
  OutputCache& off = opened_off.cache;
  CHECK_FALSE(off.enabled());
  CHECK_FALSE(opened_off.disabled);  // not asked for: nothing to say
  CHECK(off.root() == nullptr);

  OpenedCache unnamed = OutputCache::open(CacheSettings{true, "", 1});
  CHECK_FALSE(unnamed.cache.enabled());
  REQUIRE(unnamed.disabled);
  CHECK(unnamed.disabled->why == std::string(kNoCacheRoot) + "; building without the cache");
  CHECK_FALSE(unnamed.disabled->warning);

  OpenedCache dry = OutputCache::open(CacheSettings{true, tmp / "c", 1}, false);
  CHECK_FALSE(dry.cache.enabled());
  CHECK_FALSE(dry.disabled);
  CHECK_FALSE(fs::exists(tmp / "c"));

  fs::create_directory(tmp / "open");
  ::chmod((tmp / "open").c_str(), 0777);
  OpenedCache open = OutputCache::open(CacheSettings{true, tmp / "open", 1});
  CHECK_FALSE(open.cache.enabled());
  REQUIRE(open.disabled);
  CHECK(open.disabled->warning);
  CHECK(open.disabled->why.find("world-writable") != std::string::npos);
  CHECK(open.disabled->why.find("building without the cache") != std::string::npos);

  // Another user's directory (we are root here: a scratch uid owns it).
  fs::create_directory(tmp / "theirs");
  REQUIRE(::chown((tmp / "theirs").c_str(), 4242, 4242) == 0);
  OpenedCache theirs = OutputCache::open(CacheSettings{true, tmp / "theirs", 1});
  CHECK_FALSE(theirs.cache.enabled());
  REQUIRE(theirs.disabled);
  CHECK(theirs.disabled->warning);
  CHECK(theirs.disabled->why.find("is owned by uid 4242, not by you") != std::string::npos);
  CHECK(theirs.disabled->why.find("building without the cache") != std::string::npos);

  // A disabled cache answers without touching anything.
  CHECK_FALSE(off.fetch(std::string(40, 'a'), Environment{}, -1));
  CHECK_FALSE(off.store(CacheKey{}, -1, KeyInput{}, BuildInputs{}));
  off.count(true);
  CHECK(off.stats().hits == 0);
}

TEST_CASE("hits and misses are counted across opens; a damaged count starts again",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  f.cache.count(true);
  f.cache.count(false);
  f.cache.count(false);
  OutputCache again = OutputCache::open(CacheSettings{true, f.tmp / "cache", 1u << 20}).cache;
  CHECK(again.stats().hits == 1);
  CHECK(again.stats().misses == 2);
  write_file(f.tmp / "cache/stats.json", "[not an object");
  CHECK(again.stats().hits == 0);
  again.count(true);
  CHECK(again.stats().hits == 1);
  CHECK(again.stats().misses == 0);
}

TEST_CASE("evict removes the least recently used entries down to 90% of the limit",
          "[unit][output_cache]") {
  OutputCacheFixture f;
  f.cache = OutputCache::open(CacheSettings{true, f.tmp / "cache", 2500}).cache;
  std::vector<KeyInput> inputs;
  for (int i = 0; i < 3; ++i) {
    KeyInput in = f.input();
    in.extra = {"entry " + std::to_string(i)};
    REQUIRE(f.store(std::string(1000, 'a' + i), in));
    // Entry 0 was used longest ago (10 hours), entry 2 last (8 hours).
    fs::last_write_time(f.entry(in), fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
    inputs.push_back(in);
  }
  REQUIRE(f.cache.stats().bytes == 3000);
  // A hit refreshes entry 0: now entry 1 is the least recently used.
  REQUIRE(f.fetch(inputs[0]));
  f.cache.evict();
  CHECK(f.cache.stats().entries == 2);
  CHECK(fs::exists(f.entry(inputs[0])));
  CHECK_FALSE(fs::exists(f.entry(inputs[1])));
  CHECK(fs::exists(f.entry(inputs[2])));
  f.cache.evict();  // under the limit: nothing more
  CHECK(f.cache.stats().entries == 2);
}

TEST_CASE("what the compiler printed keeps its streams and order, and is replayed as it came",
          "[unit][output_cache][replay]") {
  ProcessResult run;
  run.out = "o1o2";
  run.err = "e1e2";
  run.order = {{2, 2}, {1, 2}, {2, 2}, {1, 2}};
  CompilerOutput printed;
  printed.add(run);
  REQUIRE(printed.pieces.size() == 4);
  CHECK(printed.pieces[0].stream == 2);
  CHECK(printed.pieces[0].bytes == "e1");
  CHECK(printed.pieces[1].bytes == "o1");
  CHECK(printed.size() == 8);
  // A runner that records no order: stdout, then stderr.
  ProcessResult plain;
  plain.out = "out";
  plain.err = "err";
  CompilerOutput unordered;
  unordered.add(plain);
  REQUIRE(unordered.pieces.size() == 2);
  CHECK(unordered.pieces[0].stream == 1);
  CHECK(unordered.pieces[1].bytes == "err");

  const std::string stored = encode_compiler_output(printed);
  Result<CompilerOutput> back = decode_compiler_output(stored);
  REQUIRE(back);
  REQUIRE(back->pieces.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(back->pieces[i].stream == printed.pieces[i].stream);
    CHECK(back->pieces[i].bytes == printed.pieces[i].bytes);
  }
  CHECK(encode_compiler_output(CompilerOutput{}).empty());
  REQUIRE(decode_compiler_output(""));
  CHECK(decode_compiler_output("")->empty());
  // A damaged record says what is wrong with it.
  Result<CompilerOutput> not_frame = decode_compiler_output("not a frame");
  REQUIRE_FALSE(not_frame);
  CHECK(not_frame.why().rfind("not a zstd frame of what the compiler printed", 0) == 0);
  Result<CompilerOutput> stream3 =
      decode_compiler_output(zstd_compress(std::string("\x03\x01\0\0\0\0\0\0\0x", 10)));
  REQUIRE_FALSE(stream3);
  CHECK(stream3.why() == "piece 1 names stream 3, not 1 (stdout) or 2 (stderr)");
  Result<CompilerOutput> torn =
      decode_compiler_output(zstd_compress(std::string("\x02\x09\0\0\0\0\0\0\0x", 10)));
  REQUIRE_FALSE(torn);
  CHECK(torn.why() == "piece 1 is truncated");

  TempDir tmp;
  int out = ::open((tmp / "out").c_str(), O_WRONLY | O_CREAT, 0644);
  int err = ::open((tmp / "err").c_str(), O_WRONLY | O_CREAT, 0644);
  replay_compiler_output(*back, out, err);
  ::close(out);
  ::close(err);
  CHECK(read_file(tmp / "out") == "o1o2");
  CHECK(read_file(tmp / "err") == "e1e2");
}

TEST_CASE("an entry keeps what the compiler printed and its depfile; an older one is a miss",
          "[unit][output_cache][replay]") {
  OutputCacheFixture f;
  const KeyInput in = f.input();
  BuildInputs inputs = f.read();
  CompilerOutput printed_in;
  ProcessResult run;
  run.err = "k.cpp:1: warning: unused\n";
  printed_in.add(run);
  const std::string depfile_in = "k.o: k.cpp inc/a.h\n";
  Result<std::string> entry = with_replay(inputs.manifest, printed_in, depfile_in);
  REQUIRE(entry);
  inputs.manifest = *entry;
  write_file(f.tmp / "built", "output");
  int fd = ::open((f.tmp / "built").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(f.cache.store(f.key(in), fd, in, inputs));
  ::close(fd);
  std::string manifest;
  int dest = ::open((f.tmp / "dest").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(f.cache.fetch(f.key(in).hex, f.env, dest, &manifest));
  ::close(dest);
  Result<Manifest> view = read_manifest(manifest);
  REQUIRE(view);
  REQUIRE(view->diagnostics);
  REQUIRE(view->depfile);
  Result<CompilerOutput> printed = decode_compiler_output(*view->diagnostics);
  REQUIRE(printed);
  REQUIRE(printed->pieces.size() == 1);
  CHECK(printed->pieces[0].bytes == run.err);
  Result<std::string> depfile = zstd_decompress(*view->depfile, kMaxDepfile);
  REQUIRE(depfile);
  CHECK(*depfile == depfile_in);

  // An entry an older kbuild wrote (no "diagnostics"): never a hit that
  // would lose its warnings.
  auto json = parse_manifest(read_file(f.entry(in) / "manifest"));
  REQUIRE(json);
  json->erase("diagnostics");
  write_file(f.entry(in) / "manifest", to_cbor(*json));
  CHECK_FALSE(f.fetch(in));

  // More than the caps is not stored: a hit never replays part of it.
  CompilerOutput loud;
  ProcessResult flood;
  flood.err.assign(kMaxCompilerOutput + 1, 'w');
  loud.add(flood);
  Result<std::string> refused = with_replay(inputs.manifest, loud, std::nullopt);
  REQUIRE_FALSE(refused);
  CHECK(refused.why().find("printed more than 1.0 MiB") != std::string::npos);
  CompilerOutput cut;
  ProcessResult truncated;
  truncated.err = "w";
  truncated.output_truncated = true;
  cut.add(truncated);
  CHECK_FALSE(with_replay(inputs.manifest, cut, std::nullopt));
  CHECK_FALSE(with_replay(inputs.manifest, CompilerOutput{}, std::string(kMaxDepfile + 1, 'd')));
  CHECK(with_replay(inputs.manifest, CompilerOutput{}, std::string(kMaxDepfile, 'd')));
}

TEST_CASE("a depfile's paths under the base move as make quotes them, nothing else",
          "[unit][output_cache][replay]") {
  const std::string depfile =
      "obj/k.o: /ci/a\\ b/src/k.cpp /usr/include/stdio.h \\\n /ci/a\\ b/inc/h.h\n"
      "/ci/a\\ b/inc/h.h:\nx/ci/a\\ b/y: /ci/a\\ bc/z\n";
  CHECK(rebase_depfile(depfile, "/ci/a b", "<base>") ==
        "obj/k.o: <base>/src/k.cpp /usr/include/stdio.h \\\n <base>/inc/h.h\n"
        "<base>/inc/h.h:\nx/ci/a\\ b/y: /ci/a\\ bc/z\n");
  CHECK(rebase_depfile("k.o: /b$$/k.cpp\n", "/b$", "/c") == "k.o: /c/k.cpp\n");
}

// stats.json's counters: one update adds every field, concurrent builders
// (real processes) lose no count, and nothing but a regular file is read or
// followed.
namespace fs = std::filesystem;

namespace {

TrustedDir cache_root(const TempDir& tmp) {
  Result<TrustedDir> root = open_cache_root(tmp / "cache", true);
  REQUIRE(root);
  return std::move(*root);
}

nlohmann::json counters(const TempDir& tmp) {
  return nlohmann::json::parse(read_file(tmp / "cache/stats.json"));
}

}  // namespace

TEST_CASE("one update adds every field and keeps the others") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  add_counters(root, {{"hits", 1}, {"remote_misses", 0}});
  add_counters(root, {{"hits", 2}, {"remote_hits", 1}, {"remote_bytes_down", 1000}});
  nlohmann::json j = counters(tmp);
  CHECK(j["hits"] == 3);
  CHECK(j["remote_hits"] == 1);
  CHECK(j["remote_bytes_down"] == 1000);
  CHECK_FALSE(j.contains("remote_misses"));  // a 0 adds no field
  CHECK(fs::directory_iterator(tmp / "cache") != fs::directory_iterator());
  for (const auto& e : fs::directory_iterator(tmp / "cache"))  // no temporary left
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("counts of 0 write nothing") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  add_counters(root, {{"remote_hits", 0}, {"remote_errors", 0}});
  CHECK_FALSE(fs::exists(tmp / "cache/stats.json"));
}

TEST_CASE("a damaged stats.json counts from 0 again") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  write_file(tmp / "cache/stats.json", "{\"hits\": 4");
  add_counters(root, {{"hits", 1}});
  CHECK(counters(tmp)["hits"] == 1);
  write_file(tmp / "cache/stats.json", "{\"hits\": \"many\", \"misses\": 2}");
  add_counters(root, {{"hits", 1}, {"misses", 1}});
  CHECK(counters(tmp)["hits"] == 1);
  CHECK(counters(tmp)["misses"] == 3);
}

TEST_CASE("a link at stats.json is replaced, its target never read or written") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  write_file(tmp / "elsewhere.json", "{\"hits\": 40}");
  fs::create_symlink(tmp / "elsewhere.json", tmp / "cache/stats.json");
  add_counters(root, {{"hits", 1}});
  CHECK(read_file(tmp / "elsewhere.json") == "{\"hits\": 40}");
  CHECK_FALSE(fs::is_symlink(tmp / "cache/stats.json"));
  CHECK(counters(tmp)["hits"] == 1);
}

TEST_CASE("concurrent builders each adding one update lose no count") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  constexpr int kBuilders = 8, kBuilds = 25;
  std::vector<pid_t> children;
  for (int b = 0; b < kBuilders; ++b) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int i = 0; i < kBuilds; ++i)
        add_counters(root, {{"hits", 1}, {"remote_hits", 1}, {"remote_bytes_down", 10}});
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
  }
  nlohmann::json j = counters(tmp);
  CHECK(j["hits"] == kBuilders * kBuilds);
  CHECK(j["remote_hits"] == kBuilders * kBuilds);
  CHECK(j["remote_bytes_down"] == kBuilders * kBuilds * 10);
}

// A kbuild stopped (Ctrl-Z) while it holds stats.lock: the counts are
// optional, so a build waits for them a moment at most, and Ctrl-C ends that.
TEST_CASE("stats.lock held by another: the update is skipped after a short wait") {
  TempDir tmp;
  TrustedDir root = cache_root(tmp);
  add_counters(root, {{"hits", 1}});
  // Another open file description: flock conflicts with it as with another
  // process's.
  UniqueFd holder = lock_file(root.fd(), "stats.lock", true);
  REQUIRE(holder.valid());
  auto seconds_of = [&root] {
    const auto start = std::chrono::steady_clock::now();
    add_counters(root, {{"hits", 1}});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CHECK(seconds_of() < 5);     // about half a second
  CHECK(seconds_of() < 0.25);  // once it stayed held, tried without waiting again
  CHECK(counters(tmp)["hits"] == 1);
  holder.reset();
  add_counters(root, {{"hits", 1}});
  CHECK(counters(tmp)["hits"] == 2);

  // An interrupt held pending (as run_build's guard holds it) ends the wait.
  holder = lock_file(root.fd(), "stats.lock", true);
  REQUIRE(holder.valid());
  {
    InterruptGuard guard;
    ::raise(SIGINT);
    CHECK_THROWS_WITH(add_counters(root, {{"hits", 1}}),
                      Catch::Contains("interrupted by signal 2 while waiting for") &&
                          Catch::Contains("stats.lock"));
  }
  { InterruptWatch fresh; }  // the handlers put back as they were
  CHECK(counters(tmp)["hits"] == 2);
}
