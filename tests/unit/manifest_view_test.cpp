// A manifest read in place: the same fields as the JSON document to_cbor
// wrote, and every damaged, truncated or foreign manifest refused (never
// read past its end).
#include "run/input_manifest.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "util/json.hpp"

using namespace kbuild;

namespace {

nlohmann::json sample_manifest() {
  return {{"inputs",
           {{"/usr/include/stdio.h", 31234, 1700000000123456789LL, "ab12"},
            {"/src/k.cpp", 0, -5, "cd34"}}},
          {"absent", {"/src/bits/c++config.h", "/opt/x/stdio.h"}},
          {"libraries", {{"/usr/lib/libm.so", 100, 200}}},
          {"size", 1208752u},
          {"digest", "0123456789abcdef"}};
}

}  // namespace

TEST_CASE("a manifest read in place gives what to_cbor wrote", "[unit][manifest_view]") {
  const std::string bytes = to_cbor(sample_manifest());
  std::optional<ManifestView> m = read_manifest(bytes);
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

TEST_CASE("only inputs are required, and unknown fields are skipped", "[unit][manifest_view]") {
  std::optional<ManifestView> m = read_manifest(to_cbor(
      {{"inputs", nlohmann::json::array()}, {"later", {{"x", {1.5, true, nullptr, "y"}}}}}));
  REQUIRE(m);
  CHECK(m->inputs.empty());
  CHECK_FALSE(m->size);
  CHECK_FALSE(m->digest);
  CHECK_FALSE(read_manifest(to_cbor({{"absent", nlohmann::json::array()}})));
}

TEST_CASE("a manifest of another shape is refused", "[unit][manifest_view]") {
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
          "[unit][manifest_view]") {
  const std::string bytes = to_cbor(sample_manifest());
  for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(read_manifest(bytes.substr(0, n)));
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char flip : {0x01, 0x20, 0x80, 0xff}) {
      std::string altered = bytes;
      altered[i] = static_cast<char>(altered[i] ^ flip);
      std::optional<ManifestView> m = read_manifest(altered);
      if (!m) continue;
      const char* begin = altered.data();
      const char* end = begin + altered.size();
      for (const ManifestInput& in : m->inputs)  // views stay inside the bytes
        CHECK((in.path.empty() ||
               (in.path.data() >= begin && in.path.data() + in.path.size() <= end)));
    }
}

TEST_CASE("the manifest's checks hold on a view as on the document", "[unit][manifest_view]") {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  Observation nothing_read;
  nothing_read.reported = true;
  ObservedBuild build;
  build.started = t;
  Result<std::string> none = observed_manifest(nothing_read, build);
  REQUIRE(none);
  CHECK(inputs_unchanged(*none, Environment{}));
  nlohmann::json j = sample_manifest();
  j["inputs"] = nlohmann::json::array();
  j["libraries"] = nlohmann::json::array();
  j["absent"] = {"/nonexistent-kbuild-dir/a.h"};
  CHECK(inputs_unchanged(to_cbor(j), Environment{}));
  j["absent"] = {"/nonexistent-kbuild-dir/a.h", "/"};  // "/" exists: shadowed
  CHECK_FALSE(inputs_unchanged(to_cbor(j), Environment{}));
}

// What a hit gives back besides the output is read again without the
// lists (skipped, not kept): the same fields, the same refusals.
TEST_CASE("a manifest read without its lists gives the rest, and refuses the same damage",
          "[unit][manifest_view]") {
  nlohmann::json j = sample_manifest();
  j["later"] = {{"x", {1.5, true, nullptr, "y", {{"deeper", {1, 2, 3}}}}}};
  const std::string bytes = to_cbor(j);
  std::optional<ManifestView> m = read_manifest(bytes, false);
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

// A store adds what the output is (size, digest) and what the compiler
// printed to the observed manifest without parsing it into a document.
TEST_CASE("with_fields appends fields to a manifest's CBOR, and refuses a field it has",
          "[unit][manifest_view]") {
  nlohmann::json j = sample_manifest();
  j.erase("size");
  j.erase("digest");
  const std::string bytes = to_cbor(j);
  std::optional<std::string> added = with_fields(
      bytes, {{"size", 42u}, {"digest", "beef"}, {"diagnostics", nlohmann::json::binary({1, 2})}});
  REQUIRE(added);
  std::optional<ManifestView> m = read_manifest(*added);
  REQUIRE(m);
  CHECK(m->size == 42u);
  CHECK(m->digest == "beef");
  CHECK(m->diagnostics == std::string_view("\x01\x02", 2));
  REQUIRE(m->inputs.size() == 2);
  std::optional<nlohmann::json> doc = parse_manifest(*added);
  REQUIRE(doc);
  nlohmann::json expected = j;
  expected["size"] = 42u;
  expected["digest"] = "beef";
  expected["diagnostics"] = nlohmann::json::binary({1, 2});
  CHECK(*doc == expected);
  CHECK_FALSE(with_fields(bytes, {{"inputs", nlohmann::json::array()}}));  // has it
  CHECK_FALSE(with_fields(to_cbor(nlohmann::json::array({1})), {{"size", 1}}));
  CHECK_FALSE(with_fields(bytes + "x", {{"size", 1}}));
  CHECK_FALSE(with_fields(bytes.substr(0, bytes.size() - 1), {{"size", 1}}));
  // A map's count past 23 takes a longer head.
  nlohmann::json many = {{"inputs", nlohmann::json::array()}};
  for (int i = 0; i < 22; ++i) many["k" + std::to_string(100 + i)] = i;
  std::optional<std::string> grown = with_fields(to_cbor(many), {{"x1", 1}, {"x2", 2}});
  REQUIRE(grown);
  many["x1"] = 1;
  many["x2"] = 2;
  CHECK(parse_manifest(*grown) == many);
}
