#include "devices/device_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "devices/device_file_cache.hpp"
#include "devices/plugin_file.hpp"
#include "devices/trust.hpp"
#include "kbuild/error.hpp"
#include "kbuild/redis_client.hpp"
#include "util/json_locations.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/printable.hpp"

namespace kbuild {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxDeviceFileBytes = 1 << 20;

const std::set<std::string> kTopLevelKeys = {
    "layers", "backends", "default_backend", "device",  "description", "mode",        "env_help",
    "when",   "exec",     "launcher",        "package", "plugin",      "remote_cache"};

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
  if (!section.contains("address")) check.fail(ptr, "missing 'address' (redis://HOST:PORT[/DB])");
  const std::string& address = check.expect_string(section["address"], ptr + "/address");
  Result<RedisAddress> parsed = parse_redis_url(address);
  if (!parsed) check.fail(ptr + "/address", "'" + redact_redis_url(address) + "': " + parsed.why());
  return address;
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
                            const std::string& cache_root) {
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
  std::optional<ParsedFileCache> cache = ParsedFileCache::open(cache_root);
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
