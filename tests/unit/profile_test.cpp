#include <sys/stat.h>
#include <chrono>

#include <catch2/catch.hpp>

#include "../support/fake_file_clock.hpp"
#include "../support/same_fields.hpp"
#include "../support/test_support.hpp"
#include "devices/profile.hpp"
#include "kbuild/error.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {
std::string profiles() {
  return source_root() + "/configs/profiles";
}
}  // namespace

TEST_CASE("a torch version's Inductor line drops the patch and the local suffix",
          "[unit][profile]") {
  CHECK(inductor_line_of("2.11.0+cu130") == "2.11");
  CHECK(inductor_line_of("2.9.1") == "2.9");
  CHECK(inductor_line_of("2.10.0a0+gite67e3d9") == "2.10");
  CHECK_FALSE(inductor_line_of("two.nine"));
  CHECK_FALSE(inductor_line_of("2"));
  CHECK(is_torch_version("2.9"));
  CHECK(is_torch_version("2.9.1"));
  CHECK_FALSE(is_torch_version("2.x"));
  CHECK_FALSE(is_torch_version("2.9.1+cpu"));
  CHECK_FALSE(is_torch_version("2..1"));
}

TEST_CASE("the shipped profiles: lines oldest first, extends merged, provenance kept",
          "[unit][profile]") {
  std::vector<std::string> lines = profile_lines(profiles());
  REQUIRE(lines.size() >= 4);
  CHECK(lines.front() == "2.6");
  CHECK(std::find(lines.begin(), lines.end(), "2.11") >
        std::find(lines.begin(), lines.end(), "2.7"));
  Profile p = load_profile(profiles(), "2.14");
  CHECK(p.extends == "2.11");
  CHECK(p.provenance.at("release") == "2.14.1");
  CHECK(p.lists.count("torch.libraries"));  // inherited from 2.11
  CHECK(p.isa.count("amx"));
  Profile p29 = load_profile(profiles(), "2.9");
  CHECK(p29.extends == "2.11");
  REQUIRE(p29.lists.count("device.libraries"));  // 2.9's own: c10 for every device
  CHECK(p29.lists.at("device.libraries").at(0).value == "c10");
  CHECK_FALSE(p.lists.count("device.libraries"));  // 2.14 (via 2.11) has none
  CHECK(p29.cuda_stubs);                           // from 2.11
  Profile old = load_profile(profiles(), "2.7");
  CHECK(old.link_before_output);  // from 2.6
  CHECK_FALSE(old.gcc_by_name);   // 2.7's own rule
  CHECK(old.cuda_stubs);
}

TEST_CASE("a line with no profile gets the nearest older, below the oldest the oldest",
          "[unit][profile]") {
  CHECK(choose_profile(profiles(), "2.9.1+cu130", "test").profile->name == "2.9");
  CHECK_FALSE(choose_profile(profiles(), "2.9.1+cu130", "test").note);
  CHECK(choose_profile(profiles(), "2.10.0", "test").profile->name == "2.9");
  CHECK(choose_profile(profiles(), "2.10.0", "test").note->find("2.9") != std::string::npos);
  CHECK(choose_profile(profiles(), "2.8.0", "test").profile->name == "2.8");
  CHECK_FALSE(choose_profile(profiles(), "2.8.0", "test").note);
  CHECK(choose_profile(profiles(), "2.12.0", "test").profile->name == "2.12");
  CHECK(choose_profile(profiles(), "2.13.0+cpu", "test").profile->name == "2.13");
  CHECK_FALSE(choose_profile(profiles(), "2.13.0+cpu", "test").note);
  CHECK(choose_profile(profiles(), "2.14.1", "test").profile->name == "2.14");
  CHECK_FALSE(choose_profile(profiles(), "2.14.1", "test").note);
  CHECK(choose_profile(profiles(), "1.13.1", "test").profile->name == "2.6");
  CHECK(choose_profile(profiles(), "", "default").profile->name == "2.11");
  CHECK_THROWS_AS(choose_profile_for(profiles(), "2.x", Paths{}), Error);
}

TEST_CASE("conditions: gcc by name (2.6) matches clang++, gcc-not-clang does not",
          "[unit][profile]") {
  Profile p;
  ProfileEntry e{"fexcess-precision=fast", {"gcc"}, "", 0};
  ProfileFacts f;
  f.compiler = "clang++";
  CHECK_FALSE(profile_applies(p, e, f));
  p.gcc_by_name = true;
  CHECK(profile_applies(p, e, f));
  ProfileEntry not_ppc{"march=native", {"!machine=ppc64le"}, "", 0};
  f.machine = "ppc64le";
  CHECK_FALSE(profile_applies(p, not_ppc, f));
}

TEST_CASE("a profile's device section: libraries every device adds, other keys refused",
          "[unit][profile]") {
  TempDir dir;
  write_file(dir / "2.9.json",
             R"({"profile": "2.9", "device": {"libraries": [{"flag": "c10", "when": "torch"}]}})");
  Profile p = load_profile(dir.str(), "2.9");
  REQUIRE(p.lists.count("device.libraries"));
  CHECK(p.lists.at("device.libraries").at(0).when == std::vector<std::string>{"torch"});
  write_file(dir / "2.8.json", R"({"profile": "2.8", "device": {"libs": ["c10"]}})");
  try {
    load_profile(dir.str(), "2.8");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("at /device/libs: unknown key 'libs'") != std::string::npos);
  }
}

TEST_CASE("an ISA set to null removes the one the line extends: the line has no such class",
          "[unit][profile]") {
  TempDir dir;
  write_file(dir / "2.11.json", R"({"profile": "2.11", "isa": {"avx512": {"flags": "-mavx512f"},)"
                                R"( "avx512_vnni": {"flags": "-mavx512vnni"}}})");
  write_file(dir / "2.9.json",
             R"({"profile": "2.9", "extends": "2.11", "isa": {"avx512_vnni": null}})");
  Profile p = load_profile(dir.str(), "2.9");
  CHECK(p.isa.count("avx512"));
  CHECK_FALSE(p.isa.count("avx512_vnni"));
  // The shipped 2.9: Inductor 2.9's cpu_vec_isa has no VNNI class.
  CHECK_FALSE(load_profile(profiles(), "2.9").isa.count("avx512_vnni"));
  CHECK(load_profile(profiles(), "2.11").isa.count("avx512_vnni"));
}

TEST_CASE("SVE256 has bf16 from 2.8 on; 2.6's and 2.7's Inductor have neither flag nor macro",
          "[unit][profile]") {
  // cpu_vec_isa.py: 2.6.0's VecSVE (:169-177) and 2.7.1's VecSVE256 (:171-179)
  // have "-march=armv8-a+sve" and no __ARM_FEATURE_BF16; 2.8.0's (:176-185) add both.
  for (const char* line : {"2.6", "2.7"}) {
    INFO(line);
    Profile p = load_profile(profiles(), line);
    const ProfileIsa& sve = p.isa.at("sve256");
    CHECK(sve.flags == "-march=armv8-a+sve -msve-vector-bits=256");
    CHECK(std::find(sve.macros.begin(), sve.macros.end(), "__ARM_FEATURE_BF16") ==
          sve.macros.end());
  }
  for (const char* line : {"2.8", "2.9", "2.11", "2.12", "2.13", "2.14"}) {
    INFO(line);
    Profile p = load_profile(profiles(), line);
    const ProfileIsa& sve = p.isa.at("sve256");
    CHECK(sve.flags == "-march=armv8-a+sve+bf16 -msve-vector-bits=256");
    CHECK(std::find(sve.macros.begin(), sve.macros.end(), "__ARM_FEATURE_BF16") !=
          sve.macros.end());
  }
}

namespace {
// The -march/-mcpu flags the shipped 2.13 profile gives on `machine` with `env`.
std::vector<std::string> profile_test_arch_flags(const Environment& env,
                                                 const std::string& machine) {
  const Profile p = load_profile(profiles(), "2.13");
  ProfileFacts f;
  f.env = &env;
  f.machine = machine;
  std::vector<std::string> out;
  for (const ProfileEntry* e : profile_entries(p, "base.cflags", f)) {
    std::string value = profile_value(*e, f);
    if (value.rfind("march=", 0) == 0 || value.rfind("mcpu=", 0) == 0) out.push_back(value);
  }
  return out;
}
}  // namespace

TEST_CASE("2.13 follows TORCHINDUCTOR_CPP_MARCH: unset the machine's default, empty none, a value",
          "[unit][profile]") {
  // torch 2.13's _get_cpu_arch_cflags (cpp_builder.py:998-1025), config.cpp.march (config.py:1697).
  using Flags = std::vector<std::string>;
  Environment unset;
  CHECK(profile_test_arch_flags(unset, "x86_64") == Flags{"march=native"});
  CHECK(profile_test_arch_flags(unset, "ppc64le") == Flags{"mcpu=native"});
  CHECK(profile_test_arch_flags(unset, "riscv64") == Flags{"march=rv64gc"});
  // The variable is recorded as read (the report's environment), set or not.
  CHECK(unset.consulted().count("TORCHINDUCTOR_CPP_MARCH"));
  Environment empty(std::map<std::string, std::string>{{"TORCHINDUCTOR_CPP_MARCH", ""}});
  CHECK(profile_test_arch_flags(empty, "x86_64").empty());
  CHECK(profile_test_arch_flags(empty, "ppc64le").empty());
  Environment v3(std::map<std::string, std::string>{{"TORCHINDUCTOR_CPP_MARCH", "x86-64-v3"}});
  CHECK(profile_test_arch_flags(v3, "x86_64") == Flags{"march=x86-64-v3"});
  CHECK(profile_test_arch_flags(v3, "riscv64") == Flags{"march=x86-64-v3"});
  Environment power(std::map<std::string, std::string>{{"TORCHINDUCTOR_CPP_MARCH", "power9"}});
  CHECK(profile_test_arch_flags(power, "ppc64le") == Flags{"mcpu=power9"});
  // The 2.11 line has no such variable.
  const Profile p211 = load_profile(profiles(), "2.11");
  ProfileFacts f;
  f.env = &v3;
  bool native = false;
  for (const ProfileEntry* e : profile_entries(p211, "base.cflags", f))
    native = native || profile_value(*e, f) == "march=native";
  CHECK(native);
}

namespace {
// Whether the shipped profile `line` defines TORCH_INDUCTOR_PRECOMPILE_HEADERS with `env`.
bool profile_test_precompile_macro(const std::string& line, const Environment& env) {
  const Profile p = load_profile(profiles(), line);
  ProfileFacts f;
  f.env = &env;
  for (const ProfileEntry* e : profile_entries(p, "torch.definitions", f))
    if (profile_value(*e, f) == "TORCH_INDUCTOR_PRECOMPILE_HEADERS") return true;
  return false;
}
}  // namespace

TEST_CASE("2.12 to 2.14 follow TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS: the macro only at \"1\"",
          "[unit][profile]") {
  // Inductor: config.cpp_cache_precompile_headers =
  // os.environ.get("TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS", "1") == "1" (outside fbcode),
  // and _get_torch_cpp_wrapper_definition adds the macro while it holds (2.14.1:
  // config.py:212-217, cpp_builder.py:1272-1276; measured in the sid chroot: "0" drops it).
  for (const char* line : {"2.12", "2.13", "2.14"}) {
    INFO(line);
    Environment unset;
    CHECK(profile_test_precompile_macro(line, unset));
    CHECK(unset.consulted().count("TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS"));
    for (const char* value : {"1"}) {
      Environment on(std::map<std::string, std::string>{
          {"TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS", value}});
      CHECK(profile_test_precompile_macro(line, on));
    }
    for (const char* value : {"0", "", "true", "yes"}) {
      INFO("TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS=" << value);
      Environment off(std::map<std::string, std::string>{
          {"TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS", value}});
      CHECK_FALSE(profile_test_precompile_macro(line, off));
    }
  }
  // 2.11 has no such macro.
  Environment unset;
  CHECK_FALSE(profile_test_precompile_macro("2.11", unset));
}

TEST_CASE("conditions env:NAME and env:NAME=VALUE; a bad variable name is refused",
          "[unit][profile]") {
  Profile p;
  Environment env(std::map<std::string, std::string>{{"X_SET", ""}, {"Y", "v"}});
  ProfileFacts f;
  f.env = &env;
  CHECK(profile_applies(p, ProfileEntry{"a", {"env:X_SET"}, "", 0}, f));
  CHECK(profile_applies(p, ProfileEntry{"a", {"env:X_SET="}, "", 0}, f));
  CHECK_FALSE(profile_applies(p, ProfileEntry{"a", {"env:Y="}, "", 0}, f));
  CHECK(profile_applies(p, ProfileEntry{"a", {"env:Y=v"}, "", 0}, f));
  CHECK(profile_applies(p, ProfileEntry{"a", {"!env:UNSET"}, "", 0}, f));
  CHECK(profile_value(ProfileEntry{"march=${env:Y}", {}, "", 0}, f) == "march=v");
  TempDir dir;
  write_file(dir / "2.13.json", R"({"profile": "2.13", "base": {"cflags": [)"
                                R"({"flag": "x", "when": "env:1BAD"}]}})");
  try {
    load_profile(dir.str(), "2.13");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("unknown condition 'env:1BAD'") != std::string::npos);
  }
}

// The parsed-profile cache: a later load reads the entry back, a changed
// file of the extends chain invalidates it, and a corrupt entry or one in a
// directory others may write is ignored (the files are parsed again).
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
  load_profile_cached(dir.string(), "2.14", cache.string(), true, clock);
  CHECK_FALSE(fs::exists(cache));
  profile_cache_root_at(cache);
  Profile first = load_profile_cached(dir.string(), "2.14", cache.string(), true, clock);
  fs::path entry = only_profile_entry(cache);
  CHECK(first.chain ==
        std::vector<std::string>{(dir / "2.14.json").string(), (dir / "2.11.json").string()});
  Profile again = load_profile_cached(dir.string(), "2.14", cache.string(), true, clock);
  CHECK(encode_profile(again) == encode_profile(first));

  // The entry is what answers: tampered (same length, still well-formed), it shows.
  std::string bytes = read_file(entry);
  REQUIRE(bytes.find("\x02\0\0\0O3", 0, 6) != std::string::npos);
  bytes.replace(bytes.find(std::string("\x02\0\0\0O3", 6)), 6, std::string("\x02\0\0\0O9", 6));
  write_file(entry, bytes);
  CHECK(has(flags(load_profile_cached(dir.string(), "2.14", cache.string(), true, clock)), "O9"));

  // The parent changes a list the child inherits (its date set back): parsed
  // again, the change seen.
  std::string parent = read_file(dir / "2.11.json");
  parent.replace(parent.find("\"gomp\""), 6, "\"omp5\"");
  auto date = fs::last_write_time(dir / "2.11.json");
  write_file(dir / "2.11.json", parent);
  fs::last_write_time(dir / "2.11.json", date);
  Profile changed = load_profile_cached(dir.string(), "2.14", cache.string(), true, clock);
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
  load_profile_cached(dir.string(), "2.14", cache.string(), true, clock);
  fs::path entry = only_profile_entry(cache);
  std::string good = read_file(entry);

  for (const std::string& bad :
       {std::string(), std::string("garbage"), good.substr(0, 40), good.substr(0, good.size() - 1),
        good + "x", std::string(64, '\xff')}) {
    write_file(entry, bad);
    CHECK(encode_profile(load_profile_cached(dir.string(), "2.14", cache.string(), true, clock)) ==
          encode_profile(fresh));
  }

  // A tampered entry in a world-writable directory is not used.
  std::string tampered = good;
  tampered.replace(tampered.find(std::string("\x02\0\0\0O3", 6)), 6,
                   std::string("\x02\0\0\0O9", 6));
  write_file(entry, tampered);
  REQUIRE(::chmod((cache / "discovery").c_str(), 0777) == 0);
  std::vector<std::string> used =
      flags(load_profile_cached(dir.string(), "2.14", cache.string(), true, clock));
  CHECK(has(used, "O3"));
  CHECK_FALSE(has(used, "O9"));
}
