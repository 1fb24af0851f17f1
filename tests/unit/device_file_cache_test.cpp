// The parsed-device-file cache: a later load reads the entry back, a changed
// file invalidates it, a corrupt entry or one others could write is ignored,
// and a bad file is never cached (its error is the same, warm cache or not).
// Also what every parsed-file cache shares (parsed_file_cache.hpp).
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>

#include "../support/fake_file_clock.hpp"
#include "../support/same_fields.hpp"
#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "kbuild/error.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {

// Written, then the file clock moved past the settle age (the inode change
// time cannot be set back), so the file counts as settled (as an installed
// one) and is remembered.
void write_settled(const fs::path& path, const std::string& text, FakeFileClock& clock) {
  write_file(path, text);
  clock.advance();
}

std::string npu_text() {
  return read_file(source_root() + "/configs/devices/npu.json");
}

// A cache root as kbuild makes it (loading a device file creates none).
std::string cache_root_at(const fs::path& path) {
  REQUIRE(open_cache_root(path.string(), true));
  return path.string();
}

std::vector<fs::path> entries(const fs::path& cache, const std::string& kind) {
  std::vector<fs::path> found;
  if (!fs::exists(cache / "discovery")) return found;
  for (const auto& e : fs::directory_iterator(cache / "discovery"))
    if (e.path().filename().string().rfind(kind + "-", 0) == 0) found.push_back(e.path());
  return found;
}

fs::path only_entry(const fs::path& cache) {
  std::vector<fs::path> found = entries(cache, "device");
  REQUIRE(found.size() == 1);
  return found.front();
}

std::vector<std::string> libraries(const DeviceFile& f) {
  std::vector<std::string> out;
  for (const DeviceFileEntry& e : f.lists.lists[static_cast<std::size_t>(OptionList::libraries)])
    out.push_back(e.value.text());
  return out;
}

// Replaces `from` with `to` (same length) in the file at `path`.
void patch_bytes(const fs::path& path, const std::string& from, const std::string& to) {
  std::string bytes = read_file(path);
  REQUIRE(from.size() == to.size());
  REQUIRE(bytes.find(from) != std::string::npos);
  bytes.replace(bytes.find(from), from.size(), to);
  write_file(path, bytes);
}

DeviceFileEntry entry(const std::string& text, int line) {
  return DeviceFileEntry{TemplateString::parse(text), line, "/pointer/" + std::to_string(line)};
}

// Every list, and both conditions, set.
ListBlock full_block(const std::string& tag) {
  ListBlock b;
  int line = 1;
  for (auto& list : b.lists) list = {entry("-D" + tag + "=${env:HOME:-x}", line++)};
  b.aot_mode = true;
  b.compile_only = true;
  return b;
}

LayerDef full_layer(const std::string& name) {
  return LayerDef{name, "the " + name + " layer", {"base"}, full_block(name), 41};
}

ListOverride full_override() {
  ListOverride o;
  int line = 60;
  for (auto& list : o.lists) list = std::vector<DeviceFileEntry>{entry("-lover", line++)};
  return o;
}

BaseEdit full_edit() {
  return BaseEdit{OptionList::ldflags, "march=native", std::string("march=armv8-a"), 71};
}

// A device file with every field, at every depth, set to something other
// than its default (default_fields says which are not).
DeviceFile full_device_file() {
  DeviceFile f;
  f.path = "/etc/kbuild/devices/full.json";
  f.device = "full";
  f.description = "every field set";
  f.mode = RegistrationMode::extend;
  f.mode_line = 4;
  f.env_help = {{"FULL_HOME", "where the SDK is"}};
  f.lists = full_block("lists");
  f.pkg_config = {PkgConfigPackage{"zeta", ">= 3", 9, "/pkg_config/0"}};
  f.when = {full_block("when")};
  f.exec = ExecSpec{
      {TemplateString::parse("${env:FULL_HOME}/bin/options"), TemplateString::parse("--json")},
      12.5,
      31};
  f.layers = {{"extra", full_layer("extra")}};
  f.backends = {{"fast", full_layer("fast")}};
  f.default_backend = "fast";
  f.launcher = "ccache";
  f.check_program_trust = false;
  f.remote_cache_address = "redis://127.0.0.1:6379";
  f.package = std::make_shared<const PackageSpec>(
      PackageSpec{"torch_full",
                  TemplateString::parse("${torch_npu_root}"),
                  "version.py",
                  "lib/libtorch_full.so",
                  "../setup.py",
                  "FULLSDK",
                  {TemplateString::parse("${env:FULL_HOME}/version.cfg")},
                  51});
  auto plugin = std::make_shared<PluginSpec>();
  plugin->description = "a plugin section";
  plugin->backend_env = "FULL_BACKEND";
  plugin->release_env = "FULL_RELEASE";
  plugin->default_backend = "patched";
  plugin->backends["patched"] =
      PluginBackend{"patched",           "patches every device", "a note", {full_edit()}, true,
                    {{"FULL_OFF", "1"}}, full_block("every"),    81};
  PluginRelease release;
  release.version = "2.11.0.post2";
  release.versions = {"2.11.0", "2.11.0.post2"};
  release.named = true;
  release.cann = "8.2";
  release.source = "tag v2.11.0";
  release.torch_lines = {"2.11"};
  release.backends = std::vector<std::string>{"patched"};
  release.unless_env = {{"patched", {{"FULL_OFF", "1"}}}};
  release.every_device = full_override();
  release.device = full_override();
  release.notes = {{"patched", "release note"}};
  release.base = {{"patched", {full_edit()}}};
  release.line = 91;
  plugin->releases = {release};
  plugin->line = 99;
  f.plugin = plugin;
  return f;
}

std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a device file with every field set decodes field by field as it was",
          "[unit][device-file]") {
  const DeviceFile full = full_device_file();
  REQUIRE(default_fields(full).empty());  // the test value leaves no field at its default
  std::optional<DeviceFile> back = decode_device_file(encode_device_file(full));
  REQUIRE(back);
  CHECK(differing_fields(*back, full).empty());
  // The comparison sees a changed field at any depth (#17: the plugin).
  DeviceFile other = *back;
  auto plugin = std::make_shared<PluginSpec>(*other.plugin);
  plugin->releases[0].device.lists[3]->at(0).line = 7;
  other.plugin = plugin;
  CHECK(differing_fields(other, full) == std::vector<std::string>{".#17.#5[0].#9.#0[3][0].#1"});
}

TEST_CASE("every shipped device file survives the cache's encoding unchanged",
          "[unit][device-file]") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(source_root() + "/configs/devices")) {
    if (e.path().extension() != ".json") continue;
    ++files;
    DeviceFile f = load_device_file(e.path().string());
    std::string bytes = encode_device_file(f);
    auto back = decode_device_file(bytes);
    REQUIRE(back);
    CHECK(differing_fields(*back, f).empty());
    CHECK_FALSE(decode_device_file(bytes.substr(0, bytes.size() / 2)));
    CHECK_FALSE(decode_device_file(bytes + "x"));
  }
  CHECK(files > 0);
}

TEST_CASE("a cached device file is read back, and a changed file invalidates it",
          "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path file = tmp.path() / "devices" / "npu.json", cache = tmp.path() / "cache";
  fs::create_directories(file.parent_path());
  write_settled(file, npu_text(), clock);
  // No cache root yet: none is made (a dry run writes nothing).
  load_device_file(file.string(), true, cache.string());
  CHECK_FALSE(fs::exists(cache));
  cache_root_at(cache);
  DeviceFile first = load_device_file(file.string(), true, cache.string());
  fs::path entry = only_entry(cache);
  CHECK(encode_device_file(load_device_file(file.string(), true, cache.string())) ==
        encode_device_file(first));

  // The entry is what answers: tampered (same length, still well-formed), it shows.
  patch_bytes(entry, "ascendcl", "ascendxx");
  CHECK(libraries(load_device_file(file.string(), true, cache.string())).back() == "ascendxx");

  // The file changes (its date set back, its size the same): parsed again.
  auto date = fs::last_write_time(file);
  patch_bytes(file, "\"ascendcl\"", "\"ascendcm\"");
  fs::last_write_time(file, date);
  CHECK(libraries(load_device_file(file.string(), true, cache.string())).back() == "ascendcm");
  // Read under another name (a link to it): another entry, the same answer.
  fs::create_symlink(file, tmp.path() / "devices" / "link.json");
  CHECK(load_device_file((tmp.path() / "devices" / "link.json").string(), true, cache.string())
            .path == (tmp.path() / "devices" / "link.json").string());
}

TEST_CASE("a corrupt device-file cache entry, or one others could write, is ignored",
          "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path file = tmp.path() / "npu.json", cache = tmp.path() / "cache";
  write_settled(file, npu_text(), clock);
  cache_root_at(cache);
  const std::string fresh = encode_device_file(load_device_file(file.string()));
  load_device_file(file.string(), true, cache.string());
  fs::path entry = only_entry(cache);
  const std::string good = read_file(entry);

  for (const std::string& bad :
       {std::string(), std::string("garbage"), good.substr(0, 40), good.substr(0, good.size() - 1),
        good + "x", std::string(64, '\xff')}) {
    write_file(entry, bad);
    CHECK(encode_device_file(load_device_file(file.string(), true, cache.string())) == fresh);
  }
  // A ${...} that does not parse is a bad entry, not a crash.
  std::string broken = good;
  broken.replace(broken.find("${env:ASCEND_HOME_PATH}"), 23, "${env:ASCEND_HOME_PATH ");
  write_file(entry, broken);
  CHECK(encode_device_file(load_device_file(file.string(), true, cache.string())) == fresh);

  // Tampered, and owned by another user: not used.
  write_file(entry, good);
  patch_bytes(entry, "ascendcl", "ascendxx");
  if (::geteuid() == 0) {
    REQUIRE(::chown(entry.c_str(), ::geteuid() + 4242, 0) == 0);
    CHECK(libraries(load_device_file(file.string(), true, cache.string())).back() == "ascendcl");
    REQUIRE(::chown(entry.c_str(), ::geteuid(), ::getegid()) == 0);
  }
  // Tampered, in a world-writable directory: not used.
  REQUIRE(::chmod((cache / "discovery").c_str(), 0777) == 0);
  CHECK(libraries(load_device_file(file.string(), true, cache.string())).back() == "ascendcl");
}

TEST_CASE("a bad device file is never cached: its error is the same with a warm cache",
          "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path file = tmp.path() / "npu.json", cache = tmp.path() / "cache";
  cache_root_at(cache);
  std::string bad = npu_text();
  const std::string good_list = "\"libraries\": [\"torch_npu\"";
  bad.replace(bad.find(good_list), good_list.size(), "\"libraries\": [42, \"torch_npu\"");
  write_settled(file, bad, clock);
  const std::string expected = error_of([&] { parse_device_file(bad, file.string()); });
  CHECK(expected.find(file.string() + ":") == 0);
  CHECK(expected.find("at /libraries/0: expected a string") != std::string::npos);
  for (int run = 0; run < 2; ++run)
    CHECK(error_of([&] { load_device_file(file.string(), true, cache.string()); }) == expected);
  CHECK(entries(cache, "device").empty());

  // Valid and cached, then broken again: the cached parse does not hide the error.
  write_settled(file, npu_text(), clock);
  load_device_file(file.string(), true, cache.string());
  REQUIRE(entries(cache, "device").size() == 1);
  write_settled(file, bad, clock);
  CHECK(error_of([&] { load_device_file(file.string(), true, cache.string()); }) == expected);
}

TEST_CASE("a warm device-file cache still checks the file's trust", "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path file = tmp.path() / "npu.json", cache = tmp.path() / "cache";
  write_settled(file, npu_text(), clock);
  cache_root_at(cache);
  load_device_file(file.string(), true, cache.string());
  REQUIRE(entries(cache, "device").size() == 1);
  REQUIRE(::chmod(file.c_str(), 0666) == 0);
  CHECK(error_of([&] {
          load_device_file(file.string(), true, cache.string());
        }).find("world-writable") != std::string::npos);
}

TEST_CASE("a parsed-file cache entry answers only its key, kbuild and unchanged files",
          "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path input = tmp.path() / "input.txt", cache_dir = tmp.path() / "cache";
  write_settled(input, "some input", clock);
  auto cache = ParsedFileCache::open(cache_root_at(cache_dir));
  REQUIRE(cache);
  auto stated = [&] { return *stat_files({input.string()}); };
  cache->write("test", "key", stated(), "parsed");
  CHECK(cache->read("test", "key") == std::optional<std::string>("parsed"));
  CHECK_FALSE(cache->read("test", "another key"));
  CHECK_FALSE(cache->read("other", "key"));
  // The files' stamps are the caller's when it holds them open.
  CHECK_FALSE(cache->read("test", "key", [](const std::string&) { return std::string("0:0"); }));

  // An entry copied under another key's name is not that key's.
  fs::path entry = entries(cache_dir, "test").front();
  cache->write("test", "key2", stated(), "parsed2");
  for (const fs::path& e : entries(cache_dir, "test"))
    if (e != entry) fs::copy_file(entry, e, fs::copy_options::overwrite_existing);
  CHECK_FALSE(cache->read("test", "key2"));

  // Written by another build of kbuild: its identity differs.
  std::string identity = program_identity();
  patch_bytes(entry, identity, std::string(identity.size(), 'x'));
  CHECK_FALSE(cache->read("test", "key"));

  // A file changed in the last two seconds is not remembered.
  clock.rewind();
  write_file(input, "changed input");
  cache->write("test", "fresh", stated(), "parsed");
  CHECK_FALSE(cache->read("test", "fresh"));
  // A file that changed since: stale.
  clock.advance();
  cache->write("test", "key", stated(), "parsed");
  REQUIRE(cache->read("test", "key"));
  write_file(input, "changed again");
  CHECK_FALSE(cache->read("test", "key"));
}

TEST_CASE("the mode and its line survive the cache's encoding (the extend warning names it)",
          "[unit][device-file]") {
  DeviceFile f =
      parse_device_file("{\"device\": \"acc\",\n\n \"mode\": \"extend\"}", "/cfg/a.json");
  REQUIRE(f.mode_line == 3);
  auto back = decode_device_file(encode_device_file(f));
  REQUIRE(back);
  CHECK(back->mode == RegistrationMode::extend);
  CHECK(back->mode_line == 3);
}
