// The parsed-profile cache: a later load reads the entry back, a changed
// file of the extends chain invalidates it, and a corrupt entry or one in a
// directory others may write is ignored (the files are parsed again).
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <chrono>

#include "../support/fake_file_clock.hpp"
#include "../support/same_fields.hpp"
#include "../support/test_support.hpp"
#include "devices/profile.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {

// 2.14 (extends 2.11) copied into `dir`, then the file clock moved past the
// settle age (as installed files), so the cache remembers them.
void copy_profiles(const fs::path& dir, FakeFileClock& clock) {
  fs::create_directories(dir);
  for (const char* line : {"2.11", "2.14"}) {
    fs::path to = dir / (std::string(line) + ".json");
    write_file(to, read_file(source_root() + "/configs/profiles/" + line + ".json"));
    fs::last_write_time(to, fs::file_time_type::clock::now() - std::chrono::hours(1));
  }
  clock.advance();  // the inode change time cannot be set back
}

// A cache root as kbuild makes it (the profile cache creates none).
std::string profile_cache_root_at(const fs::path& path) {
  REQUIRE(open_cache_root(path.string(), true));
  return path.string();
}

std::vector<std::string> flags(const Profile& p) {
  std::vector<std::string> out;
  for (const ProfileEntry& e : p.lists.at("base.cflags")) out.push_back(e.value);
  return out;
}

fs::path only_profile_entry(const fs::path& cache) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(cache / "discovery"))
    if (e.path().filename().string().rfind("profile-", 0) == 0) entries.push_back(e.path());
  REQUIRE(entries.size() == 1);
  return entries.front();
}

ProfileEntry full_entry(const std::string& value, int line) {
  return ProfileEntry{value, {"aot", "!debug"}, "/profiles/full.json", line};
}

// A profile with every field, at every depth, set to something other than
// its default (default_fields says which are not).
Profile full_profile() {
  Profile p;
  p.name = "9.9";
  p.file = "/profiles/9.9.json";
  p.extends = "2.11";
  p.description = "every field set";
  p.provenance = {{"repository", "https://example.org/torch"}};
  p.sources = {{"base.cflags", "cpp_builder.py:1"}};
  p.link_before_output = true;
  p.single_spaced = true;
  p.gcc_by_name = true;
  p.lists = {{"base.cflags", {full_entry("-O3", 11)}}};
  p.isa = {{"avx2", ProfileIsa{{"CPU_CAPABILITY_AVX2"}, "-mavx2", "/profiles/9.9.json", 21}}};
  p.isa_bf16 = full_entry("-mavx512bf16", 31);
  p.isa_fp16 = full_entry("-mavx512fp16", 32);
  p.cuda_stubs = false;
  p.chain = {"/profiles/9.9.json", "/profiles/2.11.json"};
  return p;
}

}  // namespace

TEST_CASE("a profile with every field set decodes field by field as it was", "[unit][profile]") {
  const Profile full = full_profile();
  REQUIRE(default_fields(full).empty());  // the test value leaves no field at its default
  std::optional<Profile> back = decode_profile(encode_profile(full));
  REQUIRE(back);
  CHECK(differing_fields(*back, full).empty());
  Profile other = *back;
  other.isa.at("avx2").line = 22;  // the comparison sees a changed field at any depth
  CHECK(differing_fields(other, full) == std::vector<std::string>{".#10[avx2].#3"});
}

TEST_CASE("every shipped profile survives the cache's encoding unchanged", "[unit][profile]") {
  for (const std::string& line : profile_lines(source_root() + "/configs/profiles")) {
    Profile p = load_profile(source_root() + "/configs/profiles", line);
    std::string bytes = encode_profile(p);
    auto back = decode_profile(bytes);
    REQUIRE(back);
    CHECK(differing_fields(*back, p).empty());
    CHECK_FALSE(decode_profile(bytes.substr(0, bytes.size() / 2)));
    CHECK_FALSE(decode_profile(bytes + "x"));
  }
}

TEST_CASE("a cached profile is read back, and a changed parent file invalidates it",
          "[unit][profile]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path dir = tmp.path() / "profiles", cache = tmp.path() / "cache";
  copy_profiles(dir, clock);
  // No cache root yet: none is made (a dry run writes nothing).
  load_profile_cached(dir.string(), "2.14", cache.string());
  CHECK_FALSE(fs::exists(cache));
  profile_cache_root_at(cache);
  Profile first = load_profile_cached(dir.string(), "2.14", cache.string());
  fs::path entry = only_profile_entry(cache);
  CHECK(first.chain ==
        std::vector<std::string>{(dir / "2.14.json").string(), (dir / "2.11.json").string()});
  Profile again = load_profile_cached(dir.string(), "2.14", cache.string());
  CHECK(encode_profile(again) == encode_profile(first));

  // The entry is what answers: tampered (same length, still well-formed), it shows.
  std::string bytes = read_file(entry);
  REQUIRE(bytes.find("\x02\0\0\0O3", 0, 6) != std::string::npos);
  bytes.replace(bytes.find(std::string("\x02\0\0\0O3", 6)), 6, std::string("\x02\0\0\0O9", 6));
  write_file(entry, bytes);
  CHECK(has(flags(load_profile_cached(dir.string(), "2.14", cache.string())), "O9"));

  // The parent changes a list the child inherits (its date set back): parsed
  // again, the change seen.
  std::string parent = read_file(dir / "2.11.json");
  parent.replace(parent.find("\"gomp\""), 6, "\"omp5\"");
  auto date = fs::last_write_time(dir / "2.11.json");
  write_file(dir / "2.11.json", parent);
  fs::last_write_time(dir / "2.11.json", date);
  Profile changed = load_profile_cached(dir.string(), "2.14", cache.string());
  std::vector<std::string> libraries;
  for (const ProfileEntry& e : changed.lists.at("torch.libraries")) libraries.push_back(e.value);
  CHECK(has(libraries, "omp5"));
  CHECK_FALSE(has(libraries, "gomp"));
  CHECK_FALSE(has(flags(changed), "O9"));
}

TEST_CASE("a corrupt cache entry, or one others could write, is ignored", "[unit][profile]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path dir = tmp.path() / "profiles", cache = tmp.path() / "cache";
  copy_profiles(dir, clock);
  profile_cache_root_at(cache);
  Profile fresh = load_profile(dir.string(), "2.14");
  load_profile_cached(dir.string(), "2.14", cache.string());
  fs::path entry = only_profile_entry(cache);
  std::string good = read_file(entry);

  for (const std::string& bad :
       {std::string(), std::string("garbage"), good.substr(0, 40), good.substr(0, good.size() - 1),
        good + "x", std::string(64, '\xff')}) {
    write_file(entry, bad);
    CHECK(encode_profile(load_profile_cached(dir.string(), "2.14", cache.string())) ==
          encode_profile(fresh));
  }

  // A tampered entry in a world-writable directory is not used.
  std::string tampered = good;
  tampered.replace(tampered.find(std::string("\x02\0\0\0O3", 6)), 6,
                   std::string("\x02\0\0\0O9", 6));
  write_file(entry, tampered);
  REQUIRE(::chmod((cache / "discovery").c_str(), 0777) == 0);
  std::vector<std::string> used = flags(load_profile_cached(dir.string(), "2.14", cache.string()));
  CHECK(has(used, "O3"));
  CHECK_FALSE(has(used, "O9"));
}
