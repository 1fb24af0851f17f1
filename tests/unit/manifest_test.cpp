// The manifest's one codec (run/manifest.hpp): every field written and read
// back, manifests written by earlier kbuilds read and written again byte for
// byte (tests/golden/manifest/), and damaged ones refused with a reason.
#include "run/manifest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "../support/cbor.hpp"
#include "../support/test_support.hpp"
#include "run/cache_key.hpp"
#include "run/input_manifest.hpp"
#include "run/output_cache.hpp"
#include "util/digest.hpp"
#include "util/json.hpp"
#include "util/process.hpp"

using namespace kbuild;
using kbuild_test::parse_manifest;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::to_cbor;
using kbuild_test::write_file;

// A manifest read in place: the same fields as the JSON document to_cbor
// wrote, and every damaged, truncated or foreign manifest refused (never
// read past its end).
namespace manifest_test {

nlohmann::json sample_manifest() {
  return {{"inputs",
           {{"/usr/include/stdio.h", 31234, 1700000000123456789LL, "ab12"},
            {"/src/k.cpp", 0, -5, "cd34"}}},
          {"absent", {"/src/bits/c++config.h", "/opt/x/stdio.h"}},
          {"libraries", {{"/usr/lib/libm.so", 100, 200}}},
          {"size", 1208752u},
          {"digest", "0123456789abcdef"}};
}

}  // namespace manifest_test

using manifest_test::sample_manifest;

TEST_CASE("a manifest read in place gives what to_cbor wrote", "[unit][manifest]") {
  const std::string bytes = to_cbor(sample_manifest());
  Result<Manifest> m = read_manifest(bytes);
  REQUIRE(m);
  REQUIRE(m->inputs.size() == 2);
  CHECK(m->inputs[0].path == "/usr/include/stdio.h");
  CHECK(m->inputs[0].size == 31234);
  CHECK(m->inputs[0].mtime_ns == 1700000000123456789LL);
  CHECK(m->inputs[0].digest == "ab12");
  CHECK(m->inputs[1].mtime_ns == -5);
  CHECK(m->absent == std::vector<std::string_view>{"/src/bits/c++config.h", "/opt/x/stdio.h"});
  REQUIRE(m->libraries.size() == 1);
  CHECK(m->libraries[0].path == "/usr/lib/libm.so");
  CHECK(m->libraries[0].mtime_ns == 200);
  CHECK(m->size == 1208752u);
  CHECK(m->digest == "0123456789abcdef");
}

TEST_CASE("only inputs are required, and unknown fields are skipped", "[unit][manifest]") {
  const std::string bytes =
      to_cbor({{"inputs", nlohmann::json::array()}, {"later", {{"x", {1.5, true, nullptr, "y"}}}}});
  Result<Manifest> m = read_manifest(bytes);
  REQUIRE(m);
  CHECK(m->inputs.empty());
  CHECK_FALSE(m->size);
  CHECK_FALSE(m->digest);
  CHECK_FALSE(read_manifest(to_cbor({{"absent", nlohmann::json::array()}})));
}

TEST_CASE("a manifest of another shape is refused", "[unit][manifest]") {
  CHECK_FALSE(read_manifest(""));
  CHECK_FALSE(read_manifest("garbage"));
  CHECK_FALSE(read_manifest("\xa1\x66inputs\x05"));  // {"inputs": 5}
  CHECK_FALSE(read_manifest(to_cbor(nlohmann::json::array({1, 2}))));
  CHECK_FALSE(read_manifest(to_cbor({{"inputs", {{"/a.h", "big", 1, "d"}}}})));
  CHECK_FALSE(read_manifest(to_cbor({{"inputs", {{"/a.h", 1, 2}}}})));  // no digest
  CHECK_FALSE(read_manifest(to_cbor({{"inputs", nlohmann::json::array()}, {"size", -1}})));
  CHECK_FALSE(read_manifest(to_cbor({{"inputs", nlohmann::json::array()}, {"absent", {1}}})));
  CHECK_FALSE(read_manifest(to_cbor({{"inputs", nlohmann::json::array()}, {"digest", 7}})));
  CHECK_FALSE(read_manifest(to_cbor(sample_manifest()) + "x"));  // trailing bytes
  // A length far beyond the end (an array of 2^32 inputs) sizes nothing.
  CHECK_FALSE(read_manifest(std::string("\xa1\x66inputs\x9a\xff\xff\xff\xff", 12)));
  // Indefinite lengths are never written by to_cbor.
  CHECK_FALSE(read_manifest(std::string("\xbf\x66inputs\x80\xff", 10)));
}

TEST_CASE("every truncation and every altered byte is refused or read within bounds",
          "[unit][manifest]") {
  const std::string bytes = to_cbor(sample_manifest());
  for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(read_manifest(bytes.substr(0, n)));
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char flip : {0x01, 0x20, 0x80, 0xff}) {
      std::string altered = bytes;
      altered[i] = static_cast<char>(altered[i] ^ flip);
      Result<Manifest> m = read_manifest(altered);
      if (!m) continue;
      const char* begin = altered.data();
      const char* end = begin + altered.size();
      for (const ManifestInput& in : m->inputs)  // views stay inside the bytes
        CHECK((in.path.empty() ||
               (in.path.data() >= begin && in.path.data() + in.path.size() <= end)));
    }
}

TEST_CASE("the manifest's checks hold on a view as on the document", "[unit][manifest]") {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  Observation nothing_read;
  nothing_read.reported = true;
  ObservedBuild build;
  build.started = t;
  Result<std::string> none = observed_manifest(nothing_read, build);
  REQUIRE(none);
  CHECK(inputs_unchanged(*none, Environment{}, kbuild::system_file_system()));
  nlohmann::json j = sample_manifest();
  j["inputs"] = nlohmann::json::array();
  j["libraries"] = nlohmann::json::array();
  j["absent"] = {"/nonexistent-kbuild-dir/a.h"};
  CHECK(inputs_unchanged(to_cbor(j), Environment{}, kbuild::system_file_system()));
  j["absent"] = {"/nonexistent-kbuild-dir/a.h", "/"};  // "/" exists: shadowed
  CHECK_FALSE(inputs_unchanged(to_cbor(j), Environment{}, kbuild::system_file_system()));
}

// What a hit gives back besides the output is read again without the
// lists (skipped, not kept): the same fields, the same refusals.
TEST_CASE("a manifest read without its lists gives the rest, and refuses the same damage",
          "[unit][manifest]") {
  nlohmann::json j = sample_manifest();
  j["later"] = {{"x", {1.5, true, nullptr, "y", {{"deeper", {1, 2, 3}}}}}};
  const std::string bytes = to_cbor(j);
  Result<Manifest> m = read_manifest(bytes, false);
  REQUIRE(m);
  CHECK(m->inputs.empty());
  CHECK(m->absent.empty());
  CHECK(m->libraries.empty());
  CHECK(m->size == 1208752u);
  CHECK(m->digest == "0123456789abcdef");
  CHECK_FALSE(read_manifest(to_cbor({{"absent", nlohmann::json::array()}}), false));
  CHECK_FALSE(read_manifest(bytes + "x", false));
  for (std::size_t n = 0; n < bytes.size(); ++n)
    CHECK_FALSE(read_manifest(bytes.substr(0, n), false));
  // Nested deeper than kMaxJsonDepth: refused, read or skipped.
  nlohmann::json deep = nlohmann::json::array();
  for (std::size_t i = 0; i < kMaxJsonDepth + 2; ++i) deep = nlohmann::json::array({deep});
  const std::string too_deep = to_cbor({{"inputs", nlohmann::json::array()}, {"later", deep}});
  CHECK_FALSE(read_manifest(too_deep));
  CHECK_FALSE(read_manifest(too_deep, false));
  // A tagged item (tag 55799, "self-described CBOR") is skipped whole.
  const char kTagged[] = "\xa2\x66inputs\x80\x65later\xd9\xd9\xf7\x82\x01\x02";
  const std::string tagged(kTagged, sizeof kTagged - 1);
  CHECK(read_manifest(tagged));
  CHECK(read_manifest(tagged, false));
  CHECK_FALSE(read_manifest(tagged.substr(0, tagged.size() - 1), false));
}

namespace manifest_test {

// A manifest with every field set, two of each record, and a field of a
// later kbuild.
Manifest full_manifest() {
  Manifest m;
  m.absent = {"/src/bits/c++config.h", "rel/x.h"};
  m.dirs = {{"/src/bits", kNoDirectory, kNoDirectory}, {"/usr/include", 17, 1LL << 40}};
  m.inputs = {{"/usr/include/stdio.h", 31234, 1700000000123456789LL, "ab12"},
              {"/src/k.cpp", 0, -5, "cd34"}};
  m.listed = {{"/usr/lib", "ef56"}};
  m.variables = {{"CPATH", "/inc"}, {"SOURCE_DATE_EPOCH", std::nullopt}};
  m.libraries = {{"/usr/lib/libm.so", 100, 200}};
  m.depfile = m.keep(std::string("\x28\xb5\x2f\xfd frame", 9));
  m.diagnostics = m.keep("");
  m.compressed = true;
  m.digest = "0123456789abcdef";
  m.size = (1ull << 32) + 7;
  m.gch = "12:34.5:678";
  m.remote = "feed";
  m.others.push_back({"later", std::string_view("\x82\x01\xf6", 3)});  // [1, null]
  return m;
}

std::string golden(const std::string& name) {
  return read_file(kbuild_test::source_root() + "/tests/golden/manifest/" + name);
}

}  // namespace manifest_test

using manifest_test::full_manifest;
using manifest_test::golden;

TEST_CASE("every field of a manifest is written and read back", "[unit][manifest]") {
  const Manifest in = full_manifest();
  const std::string bytes = manifest_bytes(in);
  Result<Manifest> out = read_manifest(bytes);
  REQUIRE(out);
  REQUIRE(out->absent == in.absent);
  REQUIRE(out->dirs.size() == 2);
  CHECK(out->dirs[0].path == "/src/bits");
  CHECK(out->dirs[0].mtime_ns == kNoDirectory);
  CHECK(out->dirs[1].ctime_ns == 1LL << 40);
  REQUIRE(out->inputs.size() == 2);
  CHECK(out->inputs[0].path == "/usr/include/stdio.h");
  CHECK(out->inputs[0].size == 31234);
  CHECK(out->inputs[0].mtime_ns == 1700000000123456789LL);
  CHECK(out->inputs[0].digest == "ab12");
  CHECK(out->inputs[1].mtime_ns == -5);
  REQUIRE(out->listed.size() == 1);
  CHECK(out->listed[0].path == "/usr/lib");
  CHECK(out->listed[0].digest == "ef56");
  REQUIRE(out->variables.size() == 2);
  CHECK(out->variables[0].name == "CPATH");
  CHECK(out->variables[0].value == "/inc");
  CHECK(out->variables[1].name == "SOURCE_DATE_EPOCH");
  CHECK_FALSE(out->variables[1].value);
  REQUIRE(out->libraries.size() == 1);
  CHECK(out->libraries[0].path == "/usr/lib/libm.so");
  CHECK(out->libraries[0].size == 100);
  CHECK(out->libraries[0].mtime_ns == 200);
  CHECK(out->depfile == std::string_view("\x28\xb5\x2f\xfd frame", 9));
  CHECK(out->diagnostics == "");
  CHECK(out->compressed);
  CHECK(out->digest == "0123456789abcdef");
  CHECK(out->size == (1ull << 32) + 7);
  CHECK(out->gch == "12:34.5:678");
  CHECK(out->remote == "feed");
  REQUIRE(out->others.size() == 1);
  CHECK(out->others[0].name == "later");
  CHECK(out->others[0].item == std::string_view("\x82\x01\xf6", 3));
  CHECK(manifest_bytes(*out) == bytes);  // and written again the same
}

// The format, read by the JSON library rather than the codec under test:
// the field names and each record's parts in their places.
TEST_CASE("a manifest is written as the format says", "[unit][manifest]") {
  std::optional<nlohmann::json> j = parse_manifest(manifest_bytes(full_manifest()));
  REQUIRE(j);
  using Array = nlohmann::json::array_t;
  CHECK((*j)["absent"] == nlohmann::json(Array{"/src/bits/c++config.h", "rel/x.h"}));
  CHECK((*j)["dirs"] ==
        nlohmann::json(Array{Array{"/src/bits", -1, -1}, Array{"/usr/include", 17, 1LL << 40}}));
  CHECK((*j)["inputs"] ==
        nlohmann::json(Array{Array{"/usr/include/stdio.h", 31234, 1700000000123456789LL, "ab12"},
                             Array{"/src/k.cpp", 0, -5, "cd34"}}));
  CHECK((*j)["listed"] == nlohmann::json(Array{Array{"/usr/lib", "ef56"}}));
  CHECK((*j)["variables"] ==
        nlohmann::json(Array{Array{"CPATH", "/inc"}, Array{"SOURCE_DATE_EPOCH", nullptr}}));
  CHECK((*j)["libraries"] == nlohmann::json(Array{Array{"/usr/lib/libm.so", 100, 200}}));
  CHECK((*j)["depfile"].is_binary());
  CHECK((*j)["diagnostics"].is_binary());
  CHECK((*j)["compression"] == "zstd");
  CHECK((*j)["digest"] == "0123456789abcdef");
  CHECK((*j)["size"] == (1ull << 32) + 7);
  CHECK((*j)["gch"] == "12:34.5:678");
  CHECK((*j)["remote"] == "feed");
  CHECK((*j)["later"] == nlohmann::json(Array{1, nullptr}));
  CHECK(j->size() == 14);
  // Unset optionals are left out; the lists what was observed fills are
  // always written, libraries only when there are some.
  std::optional<nlohmann::json> empty = parse_manifest(manifest_bytes(Manifest{}));
  REQUIRE(empty);
  CHECK(*empty == nlohmann::json({{"absent", Array{}},
                                  {"dirs", Array{}},
                                  {"inputs", Array{}},
                                  {"listed", Array{}},
                                  {"variables", Array{}}}));
}

TEST_CASE("a damaged manifest is refused with a reason", "[unit][manifest]") {
  auto why = [](const std::string& bytes) {
    Result<Manifest> m = read_manifest(bytes);
    CHECK_FALSE(m);
    return m ? std::string() : m.why();
  };
  CHECK(why("") == "the manifest is damaged: it is not a CBOR map");
  CHECK(why(to_cbor({{"absent", nlohmann::json::array()}})) ==
        "the manifest is damaged: it has no field \"inputs\"");
  const std::string inputs_as_number = "\xa1\x66inputs\x05";  // {"inputs": 5}
  CHECK(why(inputs_as_number) ==
        "the manifest is damaged: its field \"inputs\" at byte 1 does not hold what that field "
        "holds");
  CHECK(why(to_cbor({{"inputs", nlohmann::json::array()}, {"compression", "gzip"}}))
            .find("\"compression\"") != std::string::npos);
  CHECK(why(to_cbor({{"inputs", nlohmann::json::array()}}) + "xy") ==
        "the manifest is damaged: 2 bytes follow its end");
  // A field twice: which one would count is not for a reader to guess.
  const std::string twice = std::string("\xa2\x66inputs\x80\x66inputs\x80", 16);
  CHECK(why(twice) == "the manifest is damaged: it has the field \"inputs\" twice");
  const std::string name_not_text = std::string("\xa1\x01\x80", 3);
  CHECK(why(name_not_text) == "the manifest is damaged: a field's name at byte 1 is not text");
  // Records have their parts: exactly, but for those a later kbuild may
  // extend (inputs, libraries).
  CHECK_FALSE(
      read_manifest(to_cbor({{"inputs", nlohmann::json::array()}, {"dirs", {{"/d", 1, 2, 3}}}})));
  CHECK_FALSE(
      read_manifest(to_cbor({{"inputs", nlohmann::json::array()}, {"variables", {{"A", 1}}}})));
  CHECK_FALSE(read_manifest(to_cbor({{"inputs", nlohmann::json::array()}, {"listed", {{"/d"}}}})));
  // Its views point into these bytes, which must outlive it.
  const std::string extended = to_cbor({{"inputs", {{"/a.h", 1, 2, "d", 3, "later"}}}});
  Result<Manifest> longer = read_manifest(extended);
  REQUIRE(longer);
  CHECK(longer->inputs[0].digest == "d");
  CHECK(longer->inputs[0].ctime_ns == 3);
  // An earlier kbuild's row, without the ctime: read, and written back so.
  const std::string earlier = to_cbor({{"inputs", {{"/a.h", 1, 2, "d"}}}});
  Result<Manifest> shorter = read_manifest(earlier);
  REQUIRE(shorter);
  CHECK(shorter->inputs[0].ctime_ns == kNoCtime);
  const nlohmann::json again = nlohmann::json::from_cbor(manifest_bytes(*shorter));
  CHECK(again["inputs"] == nlohmann::json::parse(R"([["/a.h", 1, 2, "d"]])"));
}

TEST_CASE("a field this kbuild does not know is kept and written back as read",
          "[unit][manifest]") {
  nlohmann::json j = {{"inputs", nlohmann::json::array()},
                      {"later", {{"x", {1.5, true, nullptr, "y"}}}},
                      {"zz", nlohmann::json::binary({1, 2, 3})}};
  const std::string bytes = to_cbor(j);
  Result<Manifest> m = read_manifest(bytes);
  REQUIRE(m);
  REQUIRE(m->others.size() == 2);
  CHECK(m->others[0].name == "later");
  CHECK(m->others[1].name == "zz");
  m->size = 3;  // edited, the unknown fields stay
  std::optional<nlohmann::json> back = parse_manifest(manifest_bytes(*m));
  REQUIRE(back);
  CHECK((*back)["later"] == j["later"]);
  CHECK((*back)["zz"] == j["zz"]);
  CHECK((*back)["size"] == 3);
}

TEST_CASE("a manifest read without its lists cannot be written", "[unit][manifest]") {
  const std::string bytes = manifest_bytes(full_manifest());
  Result<Manifest> m = read_manifest(bytes, false);
  REQUIRE(m);
  CHECK_THROWS_AS(manifest_bytes(*m), std::logic_error);
}

TEST_CASE("what a manifest keeps lives as long as it or a copy of it", "[unit][manifest]") {
  Manifest copy;
  {
    Manifest m;
    m.digest = m.keep(std::string(100, 'x'));
    m.absent.push_back(m.keep("/a/b.h"));
    copy = m;
  }
  CHECK(copy.digest == std::string(100, 'x'));
  CHECK(copy.absent == std::vector<std::string_view>{"/a/b.h"});
  Result<Manifest> back = read_manifest(manifest_bytes(copy));
  CHECK(back);
}

// tests/golden/manifest/ holds manifests that kbuild 079547b (before this
// codec) wrote: read, and written again, a local entry's are the same bytes
// (no entry on disk changes, so no key version was bumped).
TEST_CASE("manifests an earlier kbuild wrote are read, and a local entry's written the same",
          "[unit][manifest][golden]") {
  for (const char* name : {"observed.cbor", "replay.cbor", "entry.cbor", "entry-compressed.cbor"}) {
    INFO(name);
    const std::string bytes = golden(name);
    Result<Manifest> m = read_manifest(bytes);
    REQUIRE(m);
    CHECK(m->others.empty());
    CHECK(manifest_bytes(*m) == bytes);
  }
  // What that kbuild shared (written through its JSON library, fields in
  // name order) reads the same; written again in the field list's order.
  for (const char* name : {"shareable.cbor", "rebased.cbor"}) {
    INFO(name);
    const std::string bytes = golden(name);
    Result<Manifest> m = read_manifest(bytes);
    REQUIRE(m);
    CHECK(m->others.empty());
    nlohmann::json expected = parse_manifest(bytes).value();
    expected["dirs"] = nlohmann::json::array();  // written, empty or not
    CHECK(parse_manifest(manifest_bytes(*m)) == expected);
  }
  const std::string compressed = golden("entry-compressed.cbor");  // the views point into it
  Result<Manifest> entry = read_manifest(compressed);
  REQUIRE(entry);
  CHECK(entry->inputs.size() == 2);
  CHECK(entry->absent.size() == 3);
  CHECK(entry->variables.size() == 3);
  CHECK(entry->listed.size() == 1);
  CHECK(entry->compressed);
  CHECK(entry->size == 10u);
  CHECK(entry->digest == digest_hex("the output"));
}

// The steps that write an entry's manifest write what the earlier kbuild
// wrote, from the same observation (the generator's, golden/manifest/README).
TEST_CASE("with_replay and a store write a local entry's manifest as an earlier kbuild did",
          "[unit][manifest][golden]") {
  const std::string t = "/tmp/kbuild-golden-manifest";
  CompilerOutput printed;
  ProcessResult run;
  run.err = "k.cpp:1: warning: unused\n";
  run.out = "note\n";
  printed.add(run);
  const std::string depfile = "k.o: " + t + "/src/k.cpp " + t + "/inc/a.h\n";
  Result<std::string> replay = with_replay(golden("observed.cbor"), printed, depfile);
  REQUIRE(replay);
  CHECK(*replay == golden("replay.cbor"));
  for (bool compress : {false, true}) {
    TempDir tmp;
    write_file(tmp / "k.cpp", "int f();\n");
    OutputCache cache =
        OutputCache::open(CacheSettings{true, tmp / "cache", 1u << 20, compress}).cache;
    KeyInput in;
    in.argv = {"/usr/bin/g++", tmp / "k.cpp", "-o", tmp / "k.so"};
    in.output_index = 3;
    in.output = tmp / "k.so";
    in.sources = {tmp / "k.cpp"};
    Result<CacheKey> key = cache_key(in, kbuild::system_file_system());
    REQUIRE(key);
    write_file(tmp / "built", "the output");
    const int fd = ::open((tmp / "built").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    BuildInputs inputs;
    inputs.manifest = *replay;
    REQUIRE(cache.store(*key, fd, in, inputs));
    ::close(fd);
    Result<StoredEntry> stored = cache.read_entry(key->hex, 1u << 20);
    REQUIRE(stored);
    CHECK(stored->manifest == golden(compress ? "entry-compressed.cbor" : "entry.cbor"));
  }
}

// Not a check: the hit's decode, timed by hand (KBUILD_MANIFEST_BENCH=1
// ./build/tests/unit_tests "manifest decode and encode times"), over a
// manifest of about 1.6 MB (3000 files read, 12000 absent paths).
TEST_CASE("manifest decode and encode times", "[unit][manifest]") {
  if (!std::getenv("KBUILD_MANIFEST_BENCH")) return;
  Manifest big;
  std::vector<std::string> text;
  text.reserve(16000);
  const std::string base = "/opt/conda/envs/torch/lib/python3.11/site-packages/torch/include/";
  for (int i = 0; i < 3000; ++i) {
    text.push_back(base + "c10/util/header_number_" + std::to_string(i) + ".h");
    big.inputs.push_back({text.back(), 12345 + i, 1796547693981413567LL + i,
                          big.keep(std::string(40, static_cast<char>('a' + i % 26)))});
  }
  for (int i = 0; i < 12000; ++i)
    big.absent.push_back(big.keep(base + "ATen/dir" + std::to_string(i % 500) + "/missing_" +
                                  std::to_string(i) + ".h"));
  for (int i = 0; i < 500; ++i)
    big.dirs.push_back({big.keep(base + "ATen/dir" + std::to_string(i)), 1, 2});
  big.diagnostics = "";
  const std::string bytes = manifest_bytes(big);
  auto time = [](const char* what, int n, auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
    WARN(what << ": " << ms.count() / n << " ms each (" << n << " runs)");
  };
  std::size_t sink = 0;
  WARN("manifest of " << bytes.size() << " bytes");
  time("read_manifest", 200, [&] { sink += read_manifest(bytes)->absent.size(); });
  time("read_manifest without lists", 200,
       [&] { sink += read_manifest(bytes, false)->size.value_or(1); });
  time("manifest_bytes", 200, [&] { sink += manifest_bytes(big).size(); });
  time("with_replay", 50,
       [&] { sink += with_replay(bytes, CompilerOutput{}, std::string("k.o: a.h\n"))->size(); });
  CHECK(sink > 0);
}
