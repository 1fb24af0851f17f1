#include <sys/stat.h>
#include <unistd.h>
#include <chrono>

#include <catch2/catch.hpp>

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
std::string config_error(const std::string& text) {
  try {
    parse_device_file(text, "/cfg/dev.json");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::config);
    return e.what();
  }
  FAIL("expected a config error for: " << text);
  return "";
}
}  // namespace

TEST_CASE("a valid device file gives its lists, conditions and entry lines",
          "[unit][device-file]") {
  DeviceFile f = parse_device_file(R"({
  "device": "npu",
  "description": "test",
  "env_help": {"ASCEND_HOME_PATH": "run set_env.sh"},
  "definitions": ["USE_NPU"],
  "include_dirs": [
    "${env:ASCEND_HOME_PATH}/include"
  ],
  "when": [{"aot_mode": true, "libraries": ["aot_only"]}]
})",
                                   "/cfg/npu.json");
  CHECK(f.device == "npu");
  CHECK(f.mode == RegistrationMode::replace);
  CHECK(f.env_help.at("ASCEND_HOME_PATH") == "run set_env.sh");
  const auto& inc = f.lists.lists[static_cast<std::size_t>(OptionList::include_dirs)];
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].line == 7);
  CHECK(inc[0].pointer == "/include_dirs/0");
  REQUIRE(f.when.size() == 1);
  CHECK(f.when[0].applies(DeviceQuery{"npu", true, false}));
  CHECK_FALSE(f.when[0].applies(DeviceQuery{"npu", false, false}));
}

TEST_CASE("malformed JSON names file, line and column", "[unit][device-file]") {
  std::string msg = config_error("{\n  \"device\": \"x\",\n  \"libraries\": [\"a\",]\n}");
  CHECK(msg.find("/cfg/dev.json:3:") == 0);
  CHECK(msg.find("malformed JSON") != std::string::npos);
}

TEST_CASE("unknown keys are errors with the key path and its position", "[unit][device-file]") {
  std::string msg = config_error("{\"device\": \"x\",\n \"librarys\": []}");
  CHECK(msg.find("/cfg/dev.json:2:") == 0);
  CHECK(msg.find("at /librarys") != std::string::npos);
  CHECK(msg.find("unknown key 'librarys'") != std::string::npos);
  CHECK(msg.find("libraries") != std::string::npos);  // the known keys are listed
  CHECK(config_error("{\"device\": \"x\", \"when\": [{\"aot_mode\": true, \"libs\": []}]}")
            .find("at /when/0/libs") != std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"exec\": {\"command\": [\"p\"], \"timeout\": 1}}")
            .find("at /exec/timeout") != std::string::npos);
}

TEST_CASE("wrong types are errors naming the expected type", "[unit][device-file]") {
  CHECK(config_error("{\"device\": \"x\", \"libraries\": \"ascendcl\"}")
            .find("at /libraries: expected an array of strings, got a string") !=
        std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"libraries\": [\"a\", 3]}")
            .find("at /libraries/1: expected a string, got a number") != std::string::npos);
  CHECK(config_error("{\"device\": 7}").find("at /device: expected a string") != std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"when\": [{\"aot_mode\": \"yes\"}]}")
            .find("expected true or false") != std::string::npos);
  CHECK(config_error("[1]").find("must be a JSON object") != std::string::npos);
}

TEST_CASE("semantic errors: names, modes, conditions, exec with lists, bad ${}",
          "[unit][device-file]") {
  CHECK(config_error("{}").find("missing required key 'device'") != std::string::npos);
  CHECK(config_error("{\"device\": \"\"}").find("invalid device name") != std::string::npos);
  CHECK(config_error("{\"device\": \"../x\"}").find("invalid device name") != std::string::npos);
  CHECK(config_error("{\"device\": \"a/b\"}").find("invalid device name") != std::string::npos);
  CHECK(
      config_error("{\"device\": \"x\", \"mode\": \"merge\"}").find("\"replace\" or \"extend\"") !=
      std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"when\": [{\"libraries\": []}]}")
            .find("needs a condition") != std::string::npos);
  CHECK(
      config_error("{\"device\": \"x\", \"libraries\": [\"a\"], \"exec\": {\"command\": [\"p\"]}}")
          .find("either 'exec' or option lists") != std::string::npos);
  CHECK(config_error("{\"device\": \"x\", \"exec\": {\"command\": []}}").find("non-empty array") !=
        std::string::npos);
  std::string bad_var =
      config_error("{\"device\": \"x\",\n\"include_dirs\": [\"${ascend_home}/inc\"]}");
  CHECK(bad_var.find("/cfg/dev.json:2:") == 0);
  CHECK(bad_var.find("unknown variable '${ascend_home}'") != std::string::npos);
}

TEST_CASE("duplicate keys are errors, never silently the last one", "[unit][device-file]") {
  std::string msg =
      config_error("{\"device\": \"x\",\n \"libraries\": [\"a\"],\n \"libraries\": [\"b\"]}");
  CHECK(msg.find("duplicate key '/libraries'") != std::string::npos);
  CHECK(msg.find("/cfg/dev.json:3:") == 0);
}

TEST_CASE("device names accept the documented alphabet only", "[unit][device-file]") {
  CHECK(is_valid_device_name("npu"));
  CHECK(is_valid_device_name("my_dev-2"));
  CHECK_FALSE(is_valid_device_name("NPU"));
  CHECK_FALSE(is_valid_device_name("2npu"));
  CHECK_FALSE(is_valid_device_name(".."));
  CHECK_FALSE(is_valid_device_name(std::string(65, 'a')));
}

TEST_CASE("load_device_file reports unreadable files as config errors", "[unit][device-file]") {
  CHECK_THROWS_MATCHES(load_device_file("/nonexistent/kbuild/x.json"), Error,
                       Catch::Predicate<Error>([](const Error& e) {
                         return e.kind() == ErrorKind::config &&
                                std::string(e.what()).find("/nonexistent/kbuild/x.json") !=
                                    std::string::npos;
                       }));
}

TEST_CASE("exec.timeout_s outside (0, 3600] is refused, however it is spelt",
          "[unit][device-file]") {
  for (const char* bad : {"0", "-1", "3601", "1e300", "1e400", "-1e400", "true", "\"30\""}) {
    INFO(bad);
    std::string text = std::string("{\"device\": \"x\", \"exec\": {\"command\": [\"p\"], ") +
                       "\"timeout_s\": " + bad + "}}";
    CHECK_THROWS_AS(parse_device_file(text, "t.json"), Error);
  }
  std::string ok = "{\"device\": \"x\", \"exec\": {\"command\": [\"p\"], \"timeout_s\": 3600}}";
  CHECK(parse_device_file(ok, "t.json").exec->timeout_s == 3600);
}

TEST_CASE("remote_cache: a device's default remote cache address, checked when loaded",
          "[unit][device-file]") {
  DeviceFile f = parse_device_file(
      R"({"device": "x", "remote_cache": {"address": "redis://cache.internal:6380/2"}})",
      "/cfg/x.json");
  CHECK(f.remote_cache_address == "redis://cache.internal:6380/2");
  CHECK(parse_device_file(R"({"device": "x"})", "/cfg/x.json").remote_cache_address.empty());
  std::string e =
      config_error("{\"device\": \"x\",\n \"remote_cache\": {\"address\": \"ftp://c:1\"}}");
  CHECK(e.find("/cfg/dev.json:2:") != std::string::npos);
  CHECK(e.find("/remote_cache/address") != std::string::npos);
  CHECK(e.find("not a redis://, unix://, http:// or https:// address") != std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": {"adress": "redis://c:1"}})");
  CHECK(e.find("unknown key 'adress'; did you mean 'address'? (known: address)") !=
        std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": "redis://c:1"})");
  CHECK(e.find("expected an object") != std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": {}})");
  CHECK(e.find("missing 'address'") != std::string::npos);
  e = config_error(R"({"device": "x", "remote_cache": {"address": 6379}})");
  CHECK(e.find("expected a string") != std::string::npos);
}

// Backends and layers: validated at load time.

TEST_CASE("extends naming a missing layer fails at load time with file, line and key",
          "[unit][device-file]") {
  std::string msg =
      config_error("{\"device\": \"acc\",\n \"backends\": {\"mlir\": {\"extends\": [\"comon\"]}}}");
  CHECK(msg.find("/cfg/dev.json:2:") == 0);
  CHECK(msg.find("at /backends/mlir/extends/0") != std::string::npos);
  CHECK(msg.find("extends unknown layer 'comon'") != std::string::npos);
}

TEST_CASE("a cycle among layers fails at load time, naming the cycle", "[unit][device-file]") {
  std::string msg = config_error(R"({"device": "acc",
    "layers": {"a": {"extends": ["b"]}, "b": {"extends": ["c"]}, "c": {"extends": ["a"]}},
    "backends": {"x": {"extends": ["a"]}}})");
  CHECK(msg.find("cycle: a -> b -> c -> a") != std::string::npos);
  CHECK(config_error(
            R"({"device": "acc", "layers": {"a": {"extends": ["a"]}}, "backends": {"x": {}}})")
            .find("cycle: a -> a") != std::string::npos);
}

TEST_CASE("a backend name used twice, or as a layer too, fails at load time",
          "[unit][device-file]") {
  CHECK(config_error("{\"device\": \"acc\", \"backends\": {\"x\": {},\n \"x\": {}}}")
            .find("duplicate key '/backends/x'") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "layers": {"x": {}}, "backends": {"x": {}}})")
            .find("both a layer and a backend") != std::string::npos);
}

TEST_CASE("an unknown key one typo from a known one says which, in every object of the file",
          "[unit][device-file]") {
  CHECK(config_error("{\"device\": \"x\",\n \"librarys\": []}")
            .find("unknown key 'librarys'; did you mean 'libraries'? (known: ") !=
        std::string::npos);
  CHECK(config_error(R"({"device": "acc", "backends": {"x": {"extend": ["a"]}}})")
            .find("unknown key 'extend'; did you mean 'extends'?") != std::string::npos);
  CHECK(config_error(R"({"device": "x", "when": [{"aot_mdoe": true}]})")
            .find("unknown key 'aot_mdoe'; did you mean 'aot_mode'?") != std::string::npos);
  CHECK(config_error(R"({"device": "x", "exec": {"comand": ["p"]}})")
            .find("unknown key 'comand'; did you mean 'command'?") != std::string::npos);
  // Far from every key: no guess, only the list.
  std::string far = config_error(R"({"device": "x", "frobnicate": []})");
  CHECK(far.find("unknown key 'frobnicate' (known: ") != std::string::npos);
  CHECK(far.find("did you mean") == std::string::npos);
}

TEST_CASE("other load-time checks: default_backend, stray layers, exec with backends, keys",
          "[unit][device-file]") {
  CHECK(config_error(R"({"device": "acc", "backends": {"x": {}}, "default_backend": "y"})")
            .find("default_backend 'y' is not one of") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "layers": {"x": {}}})").find("defines none") !=
        std::string::npos);
  CHECK(config_error(R"({"device": "acc", "exec": {"command": ["p"]}, "backends": {"x": {}}})")
            .find("handles --backend itself") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "backends": {"x": {"extend": ["a"]}}})")
            .find("at /backends/x/extend: unknown key 'extend'") != std::string::npos);
  CHECK(config_error(R"({"device": "acc", "backends": {"X Y": {}}})").find("invalid name 'X Y'") !=
        std::string::npos);
}

TEST_CASE("a device file for a built-in device says whether it replaces or extends it",
          "[unit][device-file]") {
  for (const std::string device : {"cpu", "cuda", "xpu", "mps"}) {
    const std::string msg =
        config_error("{\n\"device\": \"" + device + "\",\n\"libraries\": [\"a\"]}");
    INFO(msg);
    CHECK(msg.find("/cfg/dev.json:2:") == 0);
    CHECK(msg.find("at /device") != std::string::npos);
    CHECK(msg.find("'" + device + "' is a built-in device") != std::string::npos);
    CHECK(msg.find("\"mode\": \"extend\"") != std::string::npos);
    CHECK(msg.find("\"mode\": \"replace\"") != std::string::npos);
  }
  // Said explicitly, either way, it loads.
  CHECK(parse_device_file(R"({"device": "cuda", "mode": "replace", "libraries": ["a"]})", "c.json")
            .mode == RegistrationMode::replace);
  CHECK(parse_device_file(R"({"device": "cpu", "mode": "extend", "libraries": ["a"]})", "c.json")
            .mode == RegistrationMode::extend);
  // Another device needs no mode.
  CHECK(parse_device_file(R"({"device": "acc", "libraries": ["a"]})", "a.json").mode ==
        RegistrationMode::replace);
}

// The parsed-device-file cache: a later load reads the entry back, a changed
// file invalidates it, a corrupt entry or one others could write is ignored,
// and a bad file is never cached (its error is the same, warm cache or not).
// Also what every parsed-file cache shares (parsed_file_cache.hpp).
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
  load_device_file(file.string(), true, cache.string(), clock);
  CHECK_FALSE(fs::exists(cache));
  cache_root_at(cache);
  DeviceFile first = load_device_file(file.string(), true, cache.string(), clock);
  fs::path entry = only_entry(cache);
  CHECK(encode_device_file(load_device_file(file.string(), true, cache.string(), clock)) ==
        encode_device_file(first));

  // The entry is what answers: tampered (same length, still well-formed), it shows.
  patch_bytes(entry, "ascendcl", "ascendxx");
  CHECK(libraries(load_device_file(file.string(), true, cache.string(), clock)).back() ==
        "ascendxx");

  // The file changes (its date set back, its size the same): parsed again.
  auto date = fs::last_write_time(file);
  patch_bytes(file, "\"ascendcl\"", "\"ascendcm\"");
  fs::last_write_time(file, date);
  CHECK(libraries(load_device_file(file.string(), true, cache.string(), clock)).back() ==
        "ascendcm");
  // Read under another name (a link to it): another entry, the same answer.
  fs::create_symlink(file, tmp.path() / "devices" / "link.json");
  CHECK(
      load_device_file((tmp.path() / "devices" / "link.json").string(), true, cache.string(), clock)
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
  load_device_file(file.string(), true, cache.string(), clock);
  fs::path entry = only_entry(cache);
  const std::string good = read_file(entry);

  for (const std::string& bad :
       {std::string(), std::string("garbage"), good.substr(0, 40), good.substr(0, good.size() - 1),
        good + "x", std::string(64, '\xff')}) {
    write_file(entry, bad);
    CHECK(encode_device_file(load_device_file(file.string(), true, cache.string(), clock)) ==
          fresh);
  }
  // A ${...} that does not parse is a bad entry, not a crash.
  std::string broken = good;
  broken.replace(broken.find("${env:ASCEND_HOME_PATH}"), 23, "${env:ASCEND_HOME_PATH ");
  write_file(entry, broken);
  CHECK(encode_device_file(load_device_file(file.string(), true, cache.string(), clock)) == fresh);

  // Tampered, and owned by another user: not used.
  write_file(entry, good);
  patch_bytes(entry, "ascendcl", "ascendxx");
  if (::geteuid() == 0) {
    REQUIRE(::chown(entry.c_str(), ::geteuid() + 4242, 0) == 0);
    CHECK(libraries(load_device_file(file.string(), true, cache.string(), clock)).back() ==
          "ascendcl");
    REQUIRE(::chown(entry.c_str(), ::geteuid(), ::getegid()) == 0);
  }
  // Tampered, in a world-writable directory: not used.
  REQUIRE(::chmod((cache / "discovery").c_str(), 0777) == 0);
  CHECK(libraries(load_device_file(file.string(), true, cache.string(), clock)).back() ==
        "ascendcl");
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
    CHECK(error_of([&] { load_device_file(file.string(), true, cache.string(), clock); }) ==
          expected);
  CHECK(entries(cache, "device").empty());

  // Valid and cached, then broken again: the cached parse does not hide the error.
  write_settled(file, npu_text(), clock);
  load_device_file(file.string(), true, cache.string(), clock);
  REQUIRE(entries(cache, "device").size() == 1);
  write_settled(file, bad, clock);
  CHECK(error_of([&] { load_device_file(file.string(), true, cache.string(), clock); }) ==
        expected);
}

TEST_CASE("a warm device-file cache still checks the file's trust", "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path file = tmp.path() / "npu.json", cache = tmp.path() / "cache";
  write_settled(file, npu_text(), clock);
  cache_root_at(cache);
  load_device_file(file.string(), true, cache.string(), clock);
  REQUIRE(entries(cache, "device").size() == 1);
  REQUIRE(::chmod(file.c_str(), 0666) == 0);
  CHECK(error_of([&] {
          load_device_file(file.string(), true, cache.string(), clock);
        }).find("world-writable") != std::string::npos);
}

TEST_CASE("a parsed-file cache entry answers only its key, kbuild and unchanged files",
          "[unit][device-file]") {
  TempDir tmp;
  FakeFileClock clock;
  fs::path input = tmp.path() / "input.txt", cache_dir = tmp.path() / "cache";
  write_settled(input, "some input", clock);
  auto cache = ParsedFileCache::open(cache_root_at(cache_dir), clock);
  REQUIRE(cache);
  auto stated = [&] { return *stat_files(clock, {input.string()}); };
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

// The package and plugin sections of a device file: read and validated at
// load time, with file:line and key path; release version numbers.
namespace {

const std::string kAccFile = kbuild_test::acc_device_file();

std::string plugin_error(const std::string& text) {
  try {
    parse_device_file(text, "/cfg/acc.json");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::config);
    return e.what();
  }
  FAIL("expected a config error");
  return "";
}

// kAccFile with `from` replaced by `to` (once).
std::string acc_with(const std::string& from, const std::string& to) {
  std::string text = kAccFile;
  auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("package and plugin sections load with their backends, edits and releases",
          "[unit][plugin_file]") {
  DeviceFile f = parse_device_file(kAccFile, "/cfg/acc.json");
  REQUIRE(f.package);
  CHECK(f.package->name == "torch_acc");
  CHECK(f.package->version_file == "version.py");
  REQUIRE(f.plugin);
  CHECK(f.plugin->backend_env == "ACC_BACKEND");
  CHECK(f.plugin->default_backend == "fast");  // the file's default_backend
  const PluginBackend& fast = f.plugin->backends.at("fast");
  REQUIRE(fast.base.size() == 2);
  CHECK(fast.base[0].value == "march=native");
  CHECK_FALSE(fast.base[0].replacement);
  CHECK(fast.base[1].replacement == std::optional<std::string>("O2"));
  CHECK(fast.base[0].line == 13);
  CHECK(fast.patches_device);
  CHECK(fast.unless_env.at("ACC_NO_PATCH") == "1");
  CHECK_FALSE(f.plugin->backends.at("plain").patches_device);
  CHECK(f.plugin->releases.size() == 3);
}

TEST_CASE("plugin sections are validated at load: file:line and key path", "[unit][plugin_file]") {
  CHECK_THAT(plugin_error(acc_with("\"note\": \"patches nothing\"", "\"notes\": \"x\"")),
             Catch::Contains("/cfg/acc.json:") &&
                 Catch::Contains("at /plugin/backends/plain/notes: unknown key 'notes'"));
  CHECK_THAT(plugin_error(acc_with("\"drop\": \"march=native\"",
                                   "\"drop\": \"march=native\", \"replace\": \"x\"")),
             Catch::Contains("at /plugin/backends/fast/base/0: give exactly one of 'drop'"));
  CHECK_THAT(
      plugin_error(acc_with("\"list\": \"cflags\", \"drop\"", "\"list\": \"flags\", \"drop\"")),
      Catch::Contains("at /plugin/backends/fast/base/0/list: 'flags' is not one of the 7"));
  CHECK_THAT(
      plugin_error(acc_with("\"plain\": {\"note\"", "\"slow\": {\"note\"")),
      Catch::Contains("at /backends/plain: backend 'plain' has no state in /plugin/backends"));
  CHECK_THAT(plugin_error(acc_with("\"backends\": {\"fast\": {}, \"plain\": {}}",
                                   "\"backends\": {\"fast\": {}}")),
             Catch::Contains("at /plugin/backends/plain: plugin backend 'plain' is not one of the "
                             "device's backends"));
  CHECK_THAT(plugin_error(acc_with("\"notes\": {\"plain\"", "\"notes\": {\"nope\"")),
             Catch::Contains("/notes/nope: 'nope' is not one of the plugin's backends"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"two\": {}")),
             Catch::Contains("at /plugin/releases/two: 'two' is not a release version"));
  CHECK_THAT(plugin_error(acc_with("\"ACC_NO_PATCH\"", "\"ACC NO\"")),
             Catch::Contains("'ACC NO' is not an environment variable name"));
  CHECK_THAT(
      plugin_error(acc_with("\"/acc/every\"", "\"${nope}\"")),
      Catch::Contains("at /plugin/backends/fast/device_options/every_device/include_dirs/0"));
  CHECK_THAT(plugin_error(acc_with("\"package\"", "\"pkg\"")),
             Catch::Contains("unknown key 'pkg'"));
  std::string no_package = kAccFile;
  no_package.erase(no_package.find("\"package\""),
                   no_package.find("\"plugin\"") - no_package.find("\"package\""));
  CHECK_THAT(plugin_error(no_package),
             Catch::Contains("at /plugin/releases: releases are chosen by the package's version"));
}

TEST_CASE("a release's backends, torch lines, switches and named versions are checked at load",
          "[unit][plugin_file]") {
  DeviceFile f =
      parse_device_file(acc_with("\"2.0.0\": {}",
                                 "\"2.0.0\": {\"backends\": [\"fast\"], \"torch\": [\"2.1\"], "
                                 "\"unless_env\": {\"fast\": {}}, \"source\": \"tag v2\"}, "
                                 "\"main\": {\"versions\": [\"3.0.0\"]}"),
                        "/cfg/acc.json");
  REQUIRE(f.plugin->releases.size() == 4);
  const PluginRelease& two = f.plugin->releases[2];
  CHECK(two.backends == std::optional<std::vector<std::string>>({"fast"}));
  CHECK(two.torch_lines == std::vector<std::string>{"2.1"});
  CHECK(two.unless_env.at("fast").empty());
  CHECK(two.source == "tag v2");
  CHECK_FALSE(f.plugin->releases[0].backends);  // none given: all of the plugin's
  CHECK(f.plugin->releases[3].named);
  CHECK(f.plugin->releases[3].torch_lines == std::vector<std::string>{"3.0"});

  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"backends\": [\"slow\"]}")),
             Catch::Contains("at /plugin/releases/2.0.0/backends/0: 'slow' is not one of the "
                             "plugin's backends (fast, plain)"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"backends\": [\"plain\"]}")),
             Catch::Contains("at /plugin/releases/2.0.0/backends: the plugin's default backend "
                             "'fast' is not among them"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"torch\": [\"2.x\"]}")),
             Catch::Contains("at /plugin/releases/2.0.0/torch/0: '2.x' is not a torch line"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"unless_env\": {\"slow\": {}}}")),
             Catch::Contains("at /plugin/releases/2.0.0/unless_env/slow: 'slow' is not one of"));
  CHECK_THAT(plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {\"versions\": []}")),
             Catch::Contains("only a named release (such as master) has 'versions'"));
  CHECK_THAT(
      plugin_error(acc_with("\"2.0.0\": {}", "\"2.0.0\": {}, \"main\": {\"versions\": [\"x\"]}")),
      Catch::Contains("at /plugin/releases/main/versions/0: 'x' is not a release version"));
  CHECK_THAT(plugin_error(
                 acc_with("\"2.0.0\": {}", "\"2.0.0\": {}, \"main\": {\"versions\": [\"2.0.0\"]}")),
             Catch::Contains("version 2.0.0 already names release 2.0.0"));
  CHECK_THAT(plugin_error(acc_with("\"backend_env\"", "\"release_env\": \"A B\", \"backend_env\"")),
             Catch::Contains("at /plugin/release_env: 'A B' is not an environment variable name"));
}

TEST_CASE("release versions: the leading numbers, and the line of three", "[unit][plugin_file]") {
  CHECK(parse_release_version("2.11.0+cu130") == std::vector<long>{2, 11, 0});
  CHECK_FALSE(parse_release_version("post"));
  CHECK(release_line("2.11.0.post1") == "2.11.0");
  CHECK(release_line("2.11.0+cu130") == "2.11.0");
}
