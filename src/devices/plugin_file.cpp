#include "devices/plugin_file.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "devices/plugin_spec.hpp"
#include "kbuild/error.hpp"
#include "util/printable.hpp"

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
