
#include "devices/device_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "kbuild/error.hpp"
#include "util/json.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/remote_address.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxDeviceFileBytes = 1 << 20;

const std::set<std::string> kTopLevelKeys = {"layers",       "backends",    "default_backend",
                                             "device",       "description", "mode",
                                             "env_help",     "when",        "exec",
                                             "launcher",     "package",     "plugin",
                                             "remote_cache", "pkg_config"};

class Validator : public JsonFileReader {
 public:
  using JsonFileReader::JsonFileReader;

  const std::string& expect_string(const json& v, const std::string& ptr) const {
    if (!v.is_string()) fail(ptr, "expected a string, got " + json_type_name(v));
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find('\0') != std::string::npos)
      fail(ptr, "a NUL character (\\u0000) would cut the argument short; remove it");
    return s;
  }
  bool expect_bool(const json& v, const std::string& ptr) const {
    if (!v.is_boolean()) fail(ptr, "expected true or false, got " + json_type_name(v));
    return v.get<bool>();
  }
  TemplateString expect_template(const json& v, const std::string& ptr) const {
    const std::string& s = expect_string(v, ptr);
    try {
      return TemplateString::parse(s);
    } catch (const TemplateSyntaxError& e) {
      // Quote the value around the error, not all of a possibly huge string.
      constexpr std::size_t kContext = 40;
      std::size_t from = e.offset > kContext ? e.offset - kContext : 0;
      std::string excerpt = (from > 0 ? "..." : "") + s.substr(from, 2 * kContext) +
                            (from + 2 * kContext < s.size() ? "..." : "");
      fail(ptr, std::string(e.what()) + " at character " + std::to_string(e.offset + 1) + " of \"" +
                    excerpt + "\"");
    }
  }

  void read_list(const json& v, const std::string& ptr, std::vector<DeviceFileEntry>& out) const {
    if (!v.is_array()) fail(ptr, "expected an array of strings, got " + json_type_name(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string item = ptr + "/" + std::to_string(i);
      out.push_back(DeviceFileEntry{expect_template(v[i], item), line(item), item});
    }
  }

  // Reads the 7 lists of `obj` (other keys are checked by the caller).
  bool read_lists(const json& obj, const std::string& ptr, ListBlock& block) const {
    bool any = false;
    for (OptionList list : kAllOptionLists) {
      std::string key(list_name(list));
      if (!obj.contains(key)) continue;
      any = true;
      read_list(obj[key], ptr + "/" + key, block.lists[static_cast<std::size_t>(list)]);
    }
    return any;
  }
};

// The keys an object takes: the 7 lists and `extra`.
std::vector<std::string> keys_with_lists(const std::set<std::string>& extra) {
  std::vector<std::string> keys;
  keys.reserve(kAllOptionLists.size() + extra.size());
  for (OptionList l : kAllOptionLists) keys.emplace_back(list_name(l));
  keys.insert(keys.end(), extra.begin(), extra.end());
  return keys;
}

// A device file named after a built-in device (cpu, cuda, xpu, mps) says
// whether its lists replace the built-in's options or are added to them:
// left unsaid, a file named "cuda" would silently drop USE_CUDA and CUDA's
// dirs (the default mode is "replace", as upstream's registry).
void check_builtin_named(const Validator& check, const std::string& device) {
  for (const auto& [name, provider] : builtin_providers()) {
    if (name != device) continue;
    check.fail("/device", "'" + device +
                              "' is a built-in device, and this file does not say what it does "
                              "to the built-in options: add \"mode\": \"extend\" to add its "
                              "lists to them, or \"mode\": \"replace\" to replace them "
                              "(see docs/device-files.md), or name another device");
  }
}

// An unknown key of an object that takes the 7 lists and `extra`.
[[noreturn]] void fail_unknown(const Validator& check, const std::string& pointer,
                               const std::string& key, const std::set<std::string>& extra) {
  std::vector<std::string> keys = keys_with_lists(extra);
  check.fail_unknown_key(pointer, key, keys, comma_joined(keys));
}

// Reads "layers" or "backends": an object of name -> {description, extends, lists}.
void read_layers(const Validator& check, const json& root, const std::string& key,
                 std::map<std::string, LayerDef>& out) {
  if (!root.contains(key)) return;
  const std::string ptr = "/" + key;
  const json& all = root[key];
  if (!all.is_object())
    check.fail(ptr, "expected an object of name -> layer, got " + json_type_name(all));
  for (const auto& [name, body] : all.items()) {
    std::string lptr = ptr + "/" + json_pointer_token(name);
    if (!is_valid_device_name(name))
      check.fail(lptr, "invalid name '" + name + "' (use lowercase letters, digits, '_' or '-')",
                 true);
    if (!body.is_object()) check.fail(lptr, "expected an object, got " + json_type_name(body));
    LayerDef layer;
    layer.name = name;
    layer.line = check.line(lptr);
    for (const auto& [k, v] : body.items()) {
      std::string kptr = lptr + "/" + json_pointer_token(k);
      if (k == "description") {
        layer.description = check.expect_string(v, kptr);
      } else if (k == "extends") {
        if (!v.is_array())
          check.fail(kptr, "expected an array of layer names, got " + json_type_name(v));
        for (std::size_t i = 0; i < v.size(); ++i)
          layer.extends.push_back(check.expect_string(v[i], kptr + "/" + std::to_string(i)));
      } else if (!list_from_name(k)) {
        fail_unknown(check, kptr, k, {"description", "extends"});
      }
    }
    check.read_lists(body, lptr, layer.lists);
    out.emplace(name, std::move(layer));
  }
}

// Every `extends` names a layer, and layers do not extend themselves, however indirectly.
void check_layer_graph(const Validator& check, const DeviceFile& file) {
  auto check_extends = [&](const std::string& kind, const LayerDef& def) {
    for (std::size_t i = 0; i < def.extends.size(); ++i) {
      if (file.layers.count(def.extends[i])) continue;
      std::string known;
      for (const auto& [n, l] : file.layers) known += (known.empty() ? "" : ", ") + n;
      check.fail("/" + kind + "/" + json_pointer_token(def.name) + "/extends/" + std::to_string(i),
                 kind.substr(0, kind.size() - 1) + " '" + def.name + "' extends unknown layer '" +
                     def.extends[i] + "' (layers: " + (known.empty() ? "none" : known) + ")");
    }
  };
  for (const auto& [name, def] : file.layers) check_extends("layers", def);
  for (const auto& [name, def] : file.backends) {
    check_extends("backends", def);
    if (file.layers.count(name))
      check.fail("/backends/" + json_pointer_token(name),
                 "'" + name + "' is both a layer and a backend; give them different names", true);
  }
  // Depth-first search for a cycle among layers.
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    state[name] = 1;
    path.push_back(name);
    for (const std::string& parent : file.layers.at(name).extends) {
      if (state[parent] == 1) {
        std::string cycle;
        auto from = std::find(path.begin(), path.end(), parent);
        for (auto it = from; it != path.end(); ++it) cycle += *it + " -> ";
        check.fail("/layers/" + json_pointer_token(name) + "/extends",
                   "layers extend each other in a cycle: " + cycle + parent);
      }
      if (state[parent] == 0) visit(parent);
    }
    path.pop_back();
    state[name] = 2;
  };
  for (const auto& [name, def] : file.layers)
    if (state[name] == 0) visit(name);
}

// "remote_cache": {"address": "redis://HOST:PORT[/DB]" or "unix:///PATH"}:
// the device's default remote cache, checked now as --remote-cache would be.
std::string read_remote_cache(const Validator& check, const json& section) {
  const std::string ptr = "/remote_cache";
  if (!section.is_object())
    check.fail(ptr, "expected an object like {\"address\": \"redis://HOST:PORT\"}, got " +
                        json_type_name(section));
  for (const auto& [key, value] : section.items())
    if (key != "address")
      check.fail_unknown_key(ptr + "/" + json_pointer_token(key), key, {"address"}, "address");
  if (!section.contains("address"))
    check.fail(ptr, "missing 'address' (redis://HOST:PORT[/DB] or http://HOST[:PORT]/PATH)");
  const std::string& address = check.expect_string(section["address"], ptr + "/address");
  Status parsed = check_remote_address(address);
  if (!parsed) check.fail(ptr + "/address", "'" + redact_address(address) + "': " + parsed.why());
  return address;
}

// "pkg_config": ["zeta >= 3", ...]: each one package, optionally with a version condition.
std::vector<PkgConfigPackage> read_pkg_config(const Validator& check, const json& section) {
  const std::string ptr = "/pkg_config";
  if (!section.is_array())
    check.fail(ptr, "expected an array of pkg-config packages like [\"zeta >= 3\"], got " +
                        json_type_name(section));
  std::vector<PkgConfigPackage> packages;
  for (std::size_t i = 0; i < section.size(); ++i) {
    const std::string item = ptr + "/" + std::to_string(i);
    const std::string& text = check.expect_string(section[i], item);
    std::optional<PkgConfigPackage> package = parse_pkg_config_package(text);
    if (!package)
      check.fail(item, "'" + printable_line(text) +
                           "' is not a pkg-config package: write one package name, optionally "
                           "with a version (\"zeta\", \"zeta >= 3\"); one entry per package");
    package->line = check.line(item);
    package->pointer = item;
    packages.push_back(std::move(*package));
  }
  return packages;
}

}  // namespace

std::vector<const LayerDef*> backend_chain(const DeviceFile& file, const std::string& backend) {
  std::vector<const LayerDef*> chain;
  std::set<std::string> seen;
  std::function<void(const LayerDef&)> add = [&](const LayerDef& def) {
    for (const std::string& parent : def.extends) {
      if (seen.insert(parent).second) add(file.layers.at(parent));
    }
    chain.push_back(&def);
  };
  add(file.backends.at(backend));
  return chain;
}

bool is_valid_device_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

DeviceFile parse_device_file(std::string_view text, const std::string& path) {
  JsonDocument doc = parse_json_file_text(text, path);
  Validator check(doc, path);
  const json& root = doc.root();
  if (!root.is_object())
    check.fail("", "a device file must be a JSON object, got " + json_type_name(root));

  DeviceFile file;
  file.path = path;
  for (const auto& [key, value] : root.items()) {
    if (kTopLevelKeys.count(key) == 0 && !list_from_name(key))
      fail_unknown(check, "/" + json_pointer_token(key), key, kTopLevelKeys);
  }
  if (!root.contains("device")) check.fail("", "missing required key 'device' (the device name)");
  file.device = check.expect_string(root["device"], "/device");
  if (!is_valid_device_name(file.device))
    check.fail("/device",
               "invalid device name '" + file.device +
                   "' (use lowercase letters, digits, '_' or '-', starting with a letter)");
  if (root.contains("description"))
    file.description = check.expect_string(root["description"], "/description");
  if (root.contains("launcher")) file.launcher = check.expect_string(root["launcher"], "/launcher");
  if (root.contains("remote_cache"))
    file.remote_cache_address = read_remote_cache(check, root["remote_cache"]);
  if (root.contains("mode")) {
    const std::string& mode = check.expect_string(root["mode"], "/mode");
    file.mode_line = check.line("/mode");
    if (mode == "replace")
      file.mode = RegistrationMode::replace;
    else if (mode == "extend")
      file.mode = RegistrationMode::extend;
    else
      check.fail("/mode", "mode must be \"replace\" or \"extend\", got \"" + mode + "\"");
  }
  if (!root.contains("mode")) check_builtin_named(check, file.device);
  if (root.contains("env_help")) {
    const json& help = root["env_help"];
    if (!help.is_object())
      check.fail("/env_help", "expected an object, got " + json_type_name(help));
    for (const auto& [name, message] : help.items())
      file.env_help[name] = check.expect_string(message, "/env_help/" + json_pointer_token(name));
  }

  bool has_lists = check.read_lists(root, "", file.lists);
  if (root.contains("when")) {
    const json& when = root["when"];
    if (!when.is_array())
      check.fail("/when", "expected an array of objects, got " + json_type_name(when));
    for (std::size_t i = 0; i < when.size(); ++i) {
      std::string ptr = "/when/" + std::to_string(i);
      const json& item = when[i];
      if (!item.is_object()) check.fail(ptr, "expected an object, got " + json_type_name(item));
      ListBlock block;
      for (const auto& [key, value] : item.items()) {
        std::string kptr = ptr + "/" + json_pointer_token(key);
        if (key == "aot_mode")
          block.aot_mode = check.expect_bool(value, kptr);
        else if (key == "compile_only")
          block.compile_only = check.expect_bool(value, kptr);
        else if (!list_from_name(key))
          fail_unknown(check, kptr, key, {"aot_mode", "compile_only"});
      }
      if (!block.aot_mode && !block.compile_only)
        check.fail(ptr, "a 'when' block needs a condition: aot_mode and/or compile_only");
      has_lists = check.read_lists(item, ptr, block) || has_lists;
      file.when.push_back(std::move(block));
    }
  }
  read_layers(check, root, "layers", file.layers);
  read_layers(check, root, "backends", file.backends);
  check_layer_graph(check, file);
  if (root.contains("default_backend")) {
    file.default_backend = check.expect_string(root["default_backend"], "/default_backend");
    if (!file.backends.count(file.default_backend))
      check.fail("/default_backend", "default_backend '" + file.default_backend +
                                         "' is not one of this file's backends");
  }
  if (!file.layers.empty() && file.backends.empty())
    check.fail("/layers", "layers are applied through backends; this file defines none", true);
  if (root.contains("exec") && (!file.layers.empty() || !file.backends.empty()))
    check.fail("/exec", "an exec provider handles --backend itself; drop 'layers'/'backends'",
               true);
  if (root.contains("pkg_config")) {
    file.pkg_config = read_pkg_config(check, root["pkg_config"]);
    if (root.contains("exec"))
      check.fail("/pkg_config",
                 "an exec provider prints every option itself; drop 'pkg_config' (or ask "
                 "pkg-config in the exec program)",
                 true);
  }
  if (root.contains("exec")) {
    if (has_lists)
      check.fail("/exec", "a device file gives either 'exec' or option lists, not both", true);
    const json& exec = root["exec"];
    if (!exec.is_object()) check.fail("/exec", "expected an object, got " + json_type_name(exec));
    ExecSpec spec;
    spec.line = check.line("/exec");
    for (const auto& [key, value] : exec.items()) {
      std::string kptr = "/exec/" + json_pointer_token(key);
      if (key == "command") {
        if (!value.is_array() || value.empty())
          check.fail(kptr, "expected a non-empty array: the program and its arguments");
        for (std::size_t i = 0; i < value.size(); ++i)
          spec.command.push_back(check.expect_template(value[i], kptr + "/" + std::to_string(i)));
      } else if (key == "timeout_s") {
        if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > 3600)
          check.fail(kptr, "expected a number of seconds in (0, 3600]");
        spec.timeout_s = value.get<double>();
      } else {
        check.fail_unknown_key(kptr, key, {"command", "timeout_s"}, "command, timeout_s");
      }
    }
    if (spec.command.empty()) check.fail("/exec", "missing 'command'");
    file.exec = std::move(spec);
  }
  read_plugin_sections(doc, path, file);
  return file;
}

DeviceFile load_device_file(const std::string& path, bool check_trust,
                            const std::string& cache_root, const FileSystem& files) {
  auto unreadable = [&](int error) {
    return Error(ErrorKind::config,
                 "cannot read device file " + path + ": " + std::strerror(error));
  };
  // Checked on the real path and on the opened file, never on a name that
  // could be swapped between the check and the read.
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) throw unreadable(errno);
  const std::string real = resolved;
  std::free(resolved);
  int fd = ::open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw unreadable(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw unreadable(errno);
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorKind::config, "device file " + path + " is not a regular file");
  if (check_trust)
    if (auto trust = check_trusted_opened_file(fd, real, path, "device file"); !trust)
      throw Error(ErrorKind::config, trust.why());
  std::optional<ParsedFileCache> cache = ParsedFileCache::open(cache_root, files);
  if (cache)
    if (auto file = cached_device_file(*cache, path, real, st)) return std::move(*file);
  // Read no more than just past the limit: a huge file is refused, not loaded.
  std::string text;
  char chunk[16384];
  while (text.size() <= kMaxDeviceFileBytes) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw unreadable(errno);
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  if (text.size() > kMaxDeviceFileBytes)
    throw Error(ErrorKind::config,
                path + ": device file larger than 1 MiB; is this the right file?");
  DeviceFile file = parse_device_file(text, path);  // a bad file throws: never remembered
  struct stat after {};
  // Remembered only as read: unchanged from the open to the end of the read.
  if (cache && ::fstat(fd, &after) == 0 && file_identity(after) == file_identity(st))
    remember_device_file(*cache, file, real, after);
  return file;
}

}  // namespace kbuild

namespace kbuild {

// Each type's fields, listed once for both directions (FieldWriter and
// FieldReader, parsed_file_cache.hpp); the static_asserts stop the build when
// a struct gains a field its list lacks.
template <>
inline constexpr std::uint32_t kEnumValues<RegistrationMode> = 2;
template <>
inline constexpr std::uint32_t kEnumValues<OptionList> = kOptionListCount;

namespace {

// A ${...} that does not parse was not written by FieldWriter: a bad entry.
std::optional<TemplateString> parsed_template(const std::string& text) {
  try {
    return TemplateString::parse(text);
  } catch (const TemplateSyntaxError&) {
    return std::nullopt;
  }
}

}  // namespace

// A template is stored as its text and parsed again when read.
template <class Archive, FieldsOf<TemplateString> Self>
auto visit(Archive& a, Self& t) {
  return a.through(
      t, [](const TemplateString& s) -> const std::string& { return s.text(); }, parsed_template);
}

template <class Archive, FieldsOf<DeviceFileEntry> Self>
auto visit(Archive& a, Self& e) {
  return a(e.value, e.line, e.pointer);
}

template <class Archive, FieldsOf<ListBlock> Self>
auto visit(Archive& a, Self& b) {
  return a(b.lists, b.aot_mode, b.compile_only);
}

template <class Archive, FieldsOf<LayerDef> Self>
auto visit(Archive& a, Self& l) {
  return a(l.name, l.description, l.extends, l.lists, l.line);
}

template <class Archive, FieldsOf<PkgConfigPackage> Self>
auto visit(Archive& a, Self& p) {
  return a(p.name, p.condition, p.line, p.pointer);
}

template <class Archive, FieldsOf<ExecSpec> Self>
auto visit(Archive& a, Self& e) {
  return a(e.command, e.timeout_s, e.line);
}

template <class Archive, FieldsOf<PackageSpec> Self>
auto visit(Archive& a, Self& p) {
  return a(p.name, p.root, p.version_file, p.library, p.source_checkout_mark, p.toolkit,
           p.toolkit_version_files, p.line);
}

template <class Archive, FieldsOf<BaseEdit> Self>
auto visit(Archive& a, Self& e) {
  return a(e.list, e.value, e.replacement, e.line);
}

template <class Archive, FieldsOf<ListOverride> Self>
auto visit(Archive& a, Self& o) {
  return a(o.lists);
}

template <class Archive, FieldsOf<PluginBackend> Self>
auto visit(Archive& a, Self& b) {
  return a(b.name, b.description, b.note, b.base, b.patches_device, b.unless_env, b.every_device,
           b.line);
}

template <class Archive, FieldsOf<PluginRelease> Self>
auto visit(Archive& a, Self& r) {
  return a(r.version, r.versions, r.named, r.cann, r.source, r.torch_lines, r.backends,
           r.unless_env, r.every_device, r.device, r.notes, r.base, r.line);
}

template <class Archive, FieldsOf<PluginSpec> Self>
auto visit(Archive& a, Self& p) {
  return a(p.description, p.backend_env, p.release_env, p.default_backend, p.backends, p.releases,
           p.line);
}

template <class Archive, FieldsOf<DeviceFile> Self>
auto visit(Archive& a, Self& f) {
  return a(f.path, f.device, f.description, f.mode, f.mode_line, f.env_help, f.lists, f.pkg_config,
           f.when, f.exec, f.layers, f.backends, f.default_backend, f.launcher,
           f.check_program_trust, f.remote_cache_address, f.package, f.plugin);
}

static_assert(listed_fields<DeviceFileEntry> == aggregate_fields<DeviceFileEntry>,
              "DeviceFileEntry: a field is missing from its visit()");
static_assert(listed_fields<ListBlock> == aggregate_fields<ListBlock>,
              "ListBlock: a field is missing from its visit()");
static_assert(listed_fields<LayerDef> == aggregate_fields<LayerDef>,
              "LayerDef: a field is missing from its visit()");
static_assert(listed_fields<PkgConfigPackage> == aggregate_fields<PkgConfigPackage>,
              "PkgConfigPackage: a field is missing from its visit()");
static_assert(listed_fields<ExecSpec> == aggregate_fields<ExecSpec>,
              "ExecSpec: a field is missing from its visit()");
static_assert(listed_fields<PackageSpec> == aggregate_fields<PackageSpec>,
              "PackageSpec: a field is missing from its visit()");
static_assert(listed_fields<BaseEdit> == aggregate_fields<BaseEdit>,
              "BaseEdit: a field is missing from its visit()");
static_assert(listed_fields<ListOverride> == aggregate_fields<ListOverride>,
              "ListOverride: a field is missing from its visit()");
static_assert(listed_fields<PluginBackend> == aggregate_fields<PluginBackend>,
              "PluginBackend: a field is missing from its visit()");
static_assert(listed_fields<PluginRelease> == aggregate_fields<PluginRelease>,
              "PluginRelease: a field is missing from its visit()");
static_assert(listed_fields<PluginSpec> == aggregate_fields<PluginSpec>,
              "PluginSpec: a field is missing from its visit()");
static_assert(listed_fields<DeviceFile> == aggregate_fields<DeviceFile>,
              "DeviceFile: a field is missing from its visit()");

std::string encode_device_file(const DeviceFile& f) {
  FieldWriter w;
  w(f);
  return w.take();
}

std::optional<DeviceFile> decode_device_file(const std::string& bytes) {
  FieldReader r(bytes);
  DeviceFile f;
  r(f);
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return f;
}

std::optional<DeviceFile> cached_device_file(const ParsedFileCache& cache, const std::string& path,
                                             const std::string& real, const struct stat& st) {
  // Stamped as opened (the file checked for trust), never by its name again.
  const std::string stamp = file_identity(st);
  auto stamp_of = [&](const std::string& f) { return f == real ? stamp : std::string(); };
  std::optional<std::string> bytes = cache.read("device", path + '\n' + real, stamp_of);
  if (!bytes) return std::nullopt;
  std::optional<DeviceFile> file = decode_device_file(*bytes);
  if (!file || file->path != path) return std::nullopt;
  return file;
}

void remember_device_file(const ParsedFileCache& cache, const DeviceFile& file,
                          const std::string& real, const struct stat& st) {
  cache.write("device", file.path + '\n' + real, {StatedFile{real, st}}, encode_device_file(file));
}

}  // namespace kbuild

namespace kbuild {

namespace {

using nlohmann::json;

// Errors as the rest of the device file says them: path:line:column: at /key: what.
class Checker : public JsonFileReader {
 public:
  using JsonFileReader::JsonFileReader;

  const json& object(const json& v, const std::string& ptr, const std::set<std::string>& keys,
                     bool lists_too = false) const {
    if (!v.is_object()) fail(ptr, "expected an object, got " + json_type_name(v));
    for (const auto& [k, item] : v.items()) {
      if (keys.count(k) || (lists_too && list_from_name(k))) continue;
      std::string known = comma_joined(keys);
      if (lists_too) known += (known.empty() ? "" : ", ") + std::string("the 7 option lists");
      std::vector<std::string> candidates(keys.begin(), keys.end());
      if (lists_too)
        for (OptionList list : kAllOptionLists) candidates.emplace_back(list_name(list));
      fail_unknown_key(ptr + "/" + json_pointer_token(k), k, candidates, known);
    }
    return v;
  }
  std::string string(const json& v, const std::string& ptr) const {
    if (!v.is_string()) fail(ptr, "expected a string, got " + json_type_name(v));
    return v.get<std::string>();
  }
  TemplateString template_string(const json& v, const std::string& ptr) const {
    std::string text = string(v, ptr);
    try {
      return TemplateString::parse(text);
    } catch (const TemplateSyntaxError& e) {
      fail(ptr, std::string(e.what()) + " at character " + std::to_string(e.offset + 1));
    }
  }
  std::vector<DeviceFileEntry> entries(const json& v, const std::string& ptr) const {
    if (!v.is_array()) fail(ptr, "expected an array of strings, got " + json_type_name(v));
    std::vector<DeviceFileEntry> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::string item = ptr + "/" + std::to_string(i);
      out.push_back(DeviceFileEntry{template_string(v[i], item), line(item), item});
    }
    return out;
  }
  ListBlock block(const json& v, const std::string& ptr) const {
    object(v, ptr, {}, true);
    ListBlock out;
    for (const auto& [k, item] : v.items())
      out.lists[static_cast<std::size_t>(*list_from_name(k))] =
          entries(item, ptr + "/" + json_pointer_token(k));
    return out;
  }
  ListOverride list_override(const json& v, const std::string& ptr) const {
    object(v, ptr, {}, true);
    ListOverride out;
    for (const auto& [k, item] : v.items())
      out.lists[static_cast<std::size_t>(*list_from_name(k))] =
          entries(item, ptr + "/" + json_pointer_token(k));
    return out;
  }
  std::map<std::string, std::string> string_map(const json& v, const std::string& ptr) const {
    if (!v.is_object()) fail(ptr, "expected an object, got " + json_type_name(v));
    std::map<std::string, std::string> out;
    for (const auto& [k, item] : v.items())
      out[k] = string(item, ptr + "/" + json_pointer_token(k));
    return out;
  }
};

// object() with no keys refuses every key; maps take any key.
const json& any_object(const Checker& check, const json& v, const std::string& ptr) {
  if (!v.is_object()) check.fail(ptr, "expected an object, got " + json_type_name(v));
  return v;
}

bool is_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string relative_path(const Checker& check, const json& v, const std::string& ptr) {
  std::string p = check.string(v, ptr);
  if (p.empty() || p[0] == '/') check.fail(ptr, "expected a path relative to the package root");
  return p;
}

PackageSpec read_package(const Checker& check, const json& v) {
  check.object(v, "/package",
               {"name", "root", "version_file", "library", "source_checkout_mark", "toolkit",
                "toolkit_version_files"});
  PackageSpec p;
  p.line = check.line("/package");
  if (!v.contains("name")) check.fail("/package", "missing 'name' (the package's name)");
  if (!v.contains("root"))
    check.fail("/package", "missing 'root' (where the package is, e.g. \"${torch_npu_root}\")");
  p.name = check.string(v["name"], "/package/name");
  p.root = check.template_string(v["root"], "/package/root");
  if (v.contains("version_file"))
    p.version_file = relative_path(check, v["version_file"], "/package/version_file");
  if (v.contains("library")) p.library = relative_path(check, v["library"], "/package/library");
  if (v.contains("source_checkout_mark"))
    p.source_checkout_mark =
        relative_path(check, v["source_checkout_mark"], "/package/source_checkout_mark");
  if (v.contains("toolkit")) p.toolkit = check.string(v["toolkit"], "/package/toolkit");
  if (v.contains("toolkit_version_files"))
    for (const DeviceFileEntry& e :
         check.entries(v["toolkit_version_files"], "/package/toolkit_version_files"))
      p.toolkit_version_files.push_back(e.value);
  return p;
}

BaseEdit read_base_edit(const Checker& check, const json& v, const std::string& ptr) {
  check.object(v, ptr, {"list", "drop", "replace", "with", "why"});
  BaseEdit e;
  if (!v.contains("list")) check.fail(ptr, "missing 'list' (which of the 7 lists, e.g. cflags)");
  std::string list = check.string(v["list"], ptr + "/list");
  if (!list_from_name(list)) check.fail(ptr + "/list", "'" + list + "' is not one of the 7 lists");
  e.list = *list_from_name(list);
  if (v.contains("drop") == v.contains("replace"))
    check.fail(ptr, "give exactly one of 'drop' and 'replace'");
  if (v.contains("replace") != v.contains("with"))
    check.fail(ptr, "'replace' needs 'with' (and 'with' needs 'replace')");
  const std::string what = ptr + (v.contains("drop") ? "/drop" : "/replace");
  e.value = check.string(v.contains("drop") ? v["drop"] : v["replace"], what);
  e.line = check.line(what);  // the line that says what goes
  if (v.contains("with")) e.replacement = check.string(v["with"], ptr + "/with");
  if (v.contains("why")) check.string(v["why"], ptr + "/why");
  return e;
}

std::vector<BaseEdit> read_base_edits(const Checker& check, const json& v, const std::string& ptr) {
  if (!v.is_array()) check.fail(ptr, "expected an array of edits, got " + json_type_name(v));
  std::vector<BaseEdit> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(read_base_edit(check, v[i], ptr + "/" + std::to_string(i)));
  return out;
}

PluginBackend read_backend(const Checker& check, const std::string& name, const json& v,
                           const std::string& ptr) {
  check.object(v, ptr, {"description", "note", "base", "device_options"});
  PluginBackend b;
  b.name = name;
  b.line = check.line(ptr);
  if (v.contains("description"))
    b.description = check.string(v["description"], ptr + "/description");
  if (v.contains("note")) b.note = check.string(v["note"], ptr + "/note");
  if (v.contains("base")) b.base = read_base_edits(check, v["base"], ptr + "/base");
  if (v.contains("device_options")) {
    std::string dptr = ptr + "/device_options";
    const json& d = check.object(v["device_options"], dptr, {"unless_env", "every_device"});
    b.patches_device = true;
    if (d.contains("unless_env")) {
      b.unless_env = check.string_map(any_object(check, d["unless_env"], dptr + "/unless_env"),
                                      dptr + "/unless_env");
      for (const auto& [env, value] : b.unless_env)
        if (!is_env_name(env))
          check.fail(dptr + "/unless_env/" + json_pointer_token(env),
                     "'" + env + "' is not an environment variable name", true);
    }
    if (d.contains("every_device"))
      b.every_device = check.block(d["every_device"], dptr + "/every_device");
  }
  return b;
}

std::set<std::string> names_of(const std::map<std::string, PluginBackend>& m) {
  std::set<std::string> out;
  for (const auto& [n, b] : m) out.insert(n);
  return out;
}

// A release's own base edits, per backend: {"triton": [edits]}.
std::map<std::string, std::vector<BaseEdit>> read_release_base(const Checker& check,
                                                               const PluginSpec& plugin,
                                                               const json& v,
                                                               const std::string& ptr) {
  std::map<std::string, std::vector<BaseEdit>> out;
  for (const auto& [backend, edits] : any_object(check, v, ptr).items()) {
    const std::string bptr = ptr + "/" + json_pointer_token(backend);
    if (!plugin.backends.count(backend))
      check.fail(bptr,
                 "'" + backend + "' is not one of the plugin's backends (" +
                     comma_joined(names_of(plugin.backends)) + ")",
                 true);
    out[backend] = read_base_edits(check, edits, bptr);
  }
  return out;
}

// "2.12": a torch line, MAJOR.MINOR digits.
bool is_torch_line(const std::string& text) {
  const std::size_t dot = text.find('.');
  auto digits = [](const std::string& part) {
    return !part.empty() && part.size() < 6 && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
  };
  return dot != std::string::npos && digits(text.substr(0, dot)) && digits(text.substr(dot + 1));
}

std::vector<std::string> strings(const Checker& check, const json& v, const std::string& ptr) {
  if (!v.is_array()) check.fail(ptr, "expected an array of strings, got " + json_type_name(v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(check.string(v[i], ptr + "/" + std::to_string(i)));
  return out;
}

// A release's key: a version, or a name with the versions its version file says.
void read_release_key(const Checker& check, const std::string& key, const json& v,
                      const std::string& ptr, PluginRelease& r) {
  r.version = key;
  r.named = !parse_release_version(key);
  if (r.named && (!is_valid_device_name(key) || !v.contains("versions")))
    check.fail(ptr,
               "'" + key +
                   "' is not a release version like 2.11.0.post1 (a named release, such as "
                   "master, gives the versions its version file says in 'versions')",
               true);
  if (!r.named && v.contains("versions"))
    check.fail(
        ptr + "/versions",
        "only a named release (such as master) has 'versions'; '" + key + "' is a version itself",
        true);
  if (!v.contains("versions")) return;
  r.versions = strings(check, v["versions"], ptr + "/versions");
  for (std::size_t i = 0; i < r.versions.size(); ++i)
    if (!parse_release_version(r.versions[i]))
      check.fail(ptr + "/versions/" + std::to_string(i),
                 "'" + r.versions[i] + "' is not a release version like 2.14.0");
}

// The torch lines a release is made for: given, else its versions' MAJOR.MINOR.
void read_torch_lines(const Checker& check, const json& v, const std::string& ptr,
                      PluginRelease& r) {
  if (v.contains("torch")) {
    r.torch_lines = strings(check, v["torch"], ptr + "/torch");
    for (std::size_t i = 0; i < r.torch_lines.size(); ++i)
      if (!is_torch_line(r.torch_lines[i]))
        check.fail(ptr + "/torch/" + std::to_string(i),
                   "'" + r.torch_lines[i] + "' is not a torch line like 2.12");
    return;
  }
  for (const std::string& version : r.named ? r.versions : std::vector<std::string>{r.version}) {
    std::vector<long> numbers = parse_release_version(version).value_or(std::vector<long>{});
    if (numbers.size() < 2) continue;
    std::string line = std::to_string(numbers[0]) + "." + std::to_string(numbers[1]);
    if (std::find(r.torch_lines.begin(), r.torch_lines.end(), line) == r.torch_lines.end())
      r.torch_lines.push_back(line);
  }
}

void check_backend_name(const Checker& check, const PluginSpec& plugin, const std::string& name,
                        const std::string& ptr, bool at_key) {
  if (!plugin.backends.count(name))
    check.fail(ptr,
               "'" + name + "' is not one of the plugin's backends (" +
                   comma_joined(names_of(plugin.backends)) + ")",
               at_key);
}

// The backends a release has: each one of the plugin's, the default among them.
std::vector<std::string> read_release_backends(const Checker& check, const PluginSpec& plugin,
                                               const json& v, const std::string& ptr) {
  std::vector<std::string> out = strings(check, v, ptr);
  for (std::size_t i = 0; i < out.size(); ++i)
    check_backend_name(check, plugin, out[i], ptr + "/" + std::to_string(i), false);
  if (!plugin.default_backend.empty() &&
      std::find(out.begin(), out.end(), plugin.default_backend) == out.end())
    check.fail(ptr, "the plugin's default backend '" + plugin.default_backend +
                        "' is not among them; every release needs it");
  return out;
}

// {"triton": {"DISABLE_AOTI_PATCH": "1"}}: per backend, what switches its patch off.
std::map<std::string, std::map<std::string, std::string>> read_release_unless_env(
    const Checker& check, const PluginSpec& plugin, const json& v, const std::string& ptr) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& [backend, vars] : any_object(check, v, ptr).items()) {
    const std::string bptr = ptr + "/" + json_pointer_token(backend);
    check_backend_name(check, plugin, backend, bptr, true);
    out[backend] = check.string_map(any_object(check, vars, bptr), bptr);
    for (const auto& [env, value] : out[backend])
      if (!is_env_name(env))
        check.fail(bptr + "/" + json_pointer_token(env),
                   "'" + env + "' is not an environment variable name", true);
  }
  return out;
}

PluginRelease read_release(const Checker& check, const PluginSpec& plugin, const std::string& key,
                           const json& v, const std::string& ptr) {
  check.object(v, ptr,
               {"cann", "source", "versions", "torch", "backends", "unless_env", "every_device",
                "device", "notes", "base"});
  PluginRelease r;
  read_release_key(check, key, v, ptr, r);
  r.line = check.line(ptr);
  if (v.contains("cann")) r.cann = check.string(v["cann"], ptr + "/cann");
  if (v.contains("source")) r.source = check.string(v["source"], ptr + "/source");
  read_torch_lines(check, v, ptr, r);
  if (v.contains("backends"))
    r.backends = read_release_backends(check, plugin, v["backends"], ptr + "/backends");
  if (v.contains("unless_env"))
    r.unless_env = read_release_unless_env(check, plugin, v["unless_env"], ptr + "/unless_env");
  if (v.contains("every_device"))
    r.every_device = check.list_override(v["every_device"], ptr + "/every_device");
  if (v.contains("device")) r.device = check.list_override(v["device"], ptr + "/device");
  if (v.contains("notes")) {
    r.notes = check.string_map(any_object(check, v["notes"], ptr + "/notes"), ptr + "/notes");
    for (const auto& [backend, note] : r.notes)
      if (!plugin.backends.count(backend))
        check.fail(ptr + "/notes/" + json_pointer_token(backend),
                   "'" + backend + "' is not one of the plugin's backends", true);
  }
  if (v.contains("base")) r.base = read_release_base(check, plugin, v["base"], ptr + "/base");
  return r;
}

// A version names one release: a named release's versions are no other's.
void check_versions_unique(const Checker& check, const PluginSpec& plugin) {
  std::map<std::string, std::string> owner;  // version -> the release it names
  for (const PluginRelease& r : plugin.releases)
    if (!r.named) owner[r.version] = r.version;
  for (const PluginRelease& r : plugin.releases)
    for (std::size_t i = 0; i < r.versions.size(); ++i) {
      auto [at, fresh] = owner.emplace(r.versions[i], r.version);
      if (!fresh)
        check.fail(
            "/plugin/releases/" + json_pointer_token(r.version) + "/versions/" + std::to_string(i),
            "version " + r.versions[i] + " already names release " + at->second +
                "; a version names one release");
    }
}

// A backend the device offers must say what it does to the process, and the
// plugin cannot describe a backend the device does not have: the mistake of
// a loader registered for a backend that does not exist, caught at load.
void check_backends_match(const Checker& check, const DeviceFile& file, const PluginSpec& p) {
  if (file.backends.empty()) return;
  for (const auto& [name, def] : file.backends)
    if (!p.backends.count(name))
      check.fail("/backends/" + json_pointer_token(name),
                 "backend '" + name + "' has no state in /plugin/backends (plugin backends: " +
                     comma_joined(names_of(p.backends)) + ")",
                 true);
  for (const auto& [name, b] : p.backends)
    if (!file.backends.count(name))
      check.fail("/plugin/backends/" + json_pointer_token(name),
                 "plugin backend '" + name + "' is not one of the device's backends", true);
}

PluginSpec read_plugin(const Checker& check, const DeviceFile& file, const json& v) {
  check.object(
      v, "/plugin",
      {"description", "backend_env", "release_env", "default_backend", "backends", "releases"});
  PluginSpec p;
  p.line = check.line("/plugin");
  if (v.contains("description"))
    p.description = check.string(v["description"], "/plugin/description");
  if (v.contains("backend_env")) {
    p.backend_env = check.string(v["backend_env"], "/plugin/backend_env");
    if (!is_env_name(p.backend_env))
      check.fail("/plugin/backend_env",
                 "'" + p.backend_env + "' is not an environment variable name");
  }
  if (v.contains("release_env")) {
    p.release_env = check.string(v["release_env"], "/plugin/release_env");
    if (!is_env_name(p.release_env))
      check.fail("/plugin/release_env",
                 "'" + p.release_env + "' is not an environment variable name");
  }
  if (!v.contains("backends"))
    check.fail("/plugin", "missing 'backends' (what each backend changes in the process)");
  for (const auto& [name, body] : any_object(check, v["backends"], "/plugin/backends").items()) {
    std::string ptr = "/plugin/backends/" + json_pointer_token(name);
    if (!is_valid_device_name(name))
      check.fail(ptr, "invalid name '" + name + "' (use lowercase letters, digits, '_' or '-')",
                 true);
    p.backends.emplace(name, read_backend(check, name, body, ptr));
  }
  if (p.backends.empty()) check.fail("/plugin/backends", "a plugin needs at least one backend");
  p.default_backend = file.default_backend;
  if (v.contains("default_backend"))
    p.default_backend = check.string(v["default_backend"], "/plugin/default_backend");
  if (!p.default_backend.empty() && !p.backends.count(p.default_backend))
    check.fail(v.contains("default_backend") ? "/plugin/default_backend" : "/default_backend",
               "default backend '" + p.default_backend + "' is not one of the plugin's backends (" +
                   comma_joined(names_of(p.backends)) + ")");
  check_backends_match(check, file, p);
  if (v.contains("releases")) {
    if (!file.package)
      check.fail("/plugin/releases",
                 "releases are chosen by the package's version; add a 'package' section", true);
    for (const auto& [version, body] : any_object(check, v["releases"], "/plugin/releases").items())
      p.releases.push_back(
          read_release(check, p, version, body, "/plugin/releases/" + json_pointer_token(version)));
    check_versions_unique(check, p);
  }
  return p;
}

}  // namespace

std::optional<std::vector<long>> parse_release_version(const std::string& version) {
  std::vector<long> out;
  std::string rest = version.substr(0, version.find('+'));
  std::size_t pos = 0;
  while (pos <= rest.size()) {
    std::size_t dot = rest.find('.', pos);
    std::string part = rest.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (part.rfind("post", 0) == 0) part = part.substr(4);
    std::size_t digits = 0;
    while (digits < part.size() && std::isdigit(static_cast<unsigned char>(part[digits]))) ++digits;
    if (digits == 0 || digits > 9) break;
    out.push_back(std::stol(part.substr(0, digits)));
    if (digits != part.size() || dot == std::string::npos) break;
    pos = dot + 1;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::string release_line(const std::string& version) {
  auto numbers = parse_release_version(version);
  if (!numbers) return "";
  std::string line;
  for (std::size_t i = 0; i < numbers->size() && i < 3; ++i) {
    if (i) line += '.';
    line += std::to_string((*numbers)[i]);
  }
  return line;
}

void read_plugin_sections(const JsonDocument& doc, const std::string& path, DeviceFile& file) {
  const json& root = doc.root();
  Checker check(doc, path);
  if (root.contains("package"))
    file.package = std::make_shared<PackageSpec>(read_package(check, root["package"]));
  if (root.contains("plugin")) {
    if (file.exec)
      check.fail("/plugin", "an exec provider cannot also be a plugin; drop 'plugin' or 'exec'",
                 true);
    file.plugin = std::make_shared<PluginSpec>(read_plugin(check, file, root["plugin"]));
  }
}

}  // namespace kbuild
