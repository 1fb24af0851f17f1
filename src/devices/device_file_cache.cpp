#include "devices/device_file_cache.hpp"

#include <cstdint>
#include <memory>

#include "kbuild/plugin_spec.hpp"
#include "util/parsed_file_cache.hpp"

namespace kbuild {

namespace {

// A new field in one of these structs must be written and read below too:
// the sizes stop the build until it is (update them with the codec).
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(DeviceFile) == 632, "update device_file_cache.cpp's codec");
static_assert(sizeof(LayerDef) == 272, "update device_file_cache.cpp's codec");
static_assert(sizeof(ListBlock) == 176, "update device_file_cache.cpp's codec");
static_assert(sizeof(DeviceFileEntry) == 96, "update device_file_cache.cpp's codec");
static_assert(sizeof(ExecSpec) == 40, "update device_file_cache.cpp's codec");
static_assert(sizeof(PackageSpec) == 248, "update device_file_cache.cpp's codec");
static_assert(sizeof(BaseEdit) == 88, "update device_file_cache.cpp's codec");
static_assert(sizeof(PluginBackend) == 360, "update device_file_cache.cpp's codec");
static_assert(sizeof(PluginRelease) == 784, "update device_file_cache.cpp's codec");
static_assert(sizeof(PluginSpec) == 208, "update device_file_cache.cpp's codec");
#endif

class Encoder : public ByteWriter {
 public:
  void entries(const std::vector<DeviceFileEntry>& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (const DeviceFileEntry& e : v) {
      str(e.value.text());
      u32(static_cast<std::uint32_t>(e.line));
      str(e.pointer);
    }
  }
  void templates(const std::vector<TemplateString>& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (const TemplateString& t : v) str(t.text());
  }
  void maybe_flag(const std::optional<bool>& b) {
    flag(b.has_value());
    flag(b.value_or(false));
  }
  void block(const ListBlock& b) {
    for (const auto& list : b.lists) entries(list);
    maybe_flag(b.aot_mode);
    maybe_flag(b.compile_only);
  }
  void layers(const std::map<std::string, LayerDef>& m) {
    u32(static_cast<std::uint32_t>(m.size()));
    for (const auto& [name, l] : m) {
      str(name), str(l.name), str(l.description);
      strings(l.extends);
      block(l.lists);
      u32(static_cast<std::uint32_t>(l.line));
    }
  }
  void edits(const std::vector<BaseEdit>& v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (const BaseEdit& e : v) {
      u32(static_cast<std::uint32_t>(e.list));
      str(e.value);
      flag(e.replacement.has_value());
      str(e.replacement.value_or(""));
      u32(static_cast<std::uint32_t>(e.line));
    }
  }
  void list_override(const ListOverride& o) {
    for (const auto& list : o.lists) {
      flag(list.has_value());
      if (list) entries(*list);
    }
  }
  void package(const PackageSpec& p) {
    str(p.name), str(p.root.text()), str(p.version_file), str(p.library);
    str(p.source_checkout_mark), str(p.toolkit);
    templates(p.toolkit_version_files);
    u32(static_cast<std::uint32_t>(p.line));
  }
  void plugin(const PluginSpec& p) {
    str(p.description), str(p.backend_env), str(p.release_env), str(p.default_backend);
    u32(static_cast<std::uint32_t>(p.backends.size()));
    for (const auto& [name, b] : p.backends) {
      str(name), str(b.name), str(b.description), str(b.note);
      edits(b.base);
      flag(b.patches_device);
      strings(b.unless_env);
      block(b.every_device);
      u32(static_cast<std::uint32_t>(b.line));
    }
    u32(static_cast<std::uint32_t>(p.releases.size()));
    for (const PluginRelease& r : p.releases) {
      str(r.version), str(r.cann), str(r.source);
      flag(r.named);
      strings(r.versions);
      strings(r.torch_lines);
      flag(r.backends.has_value());
      strings(r.backends.value_or(std::vector<std::string>{}));
      u32(static_cast<std::uint32_t>(r.unless_env.size()));
      for (const auto& [backend, vars] : r.unless_env) str(backend), strings(vars);
      list_override(r.every_device);
      list_override(r.device);
      strings(r.notes);
      u32(static_cast<std::uint32_t>(r.base.size()));
      for (const auto& [backend, list] : r.base) str(backend), edits(list);
      u32(static_cast<std::uint32_t>(r.line));
    }
    u32(static_cast<std::uint32_t>(p.line));
  }
};

class Decoder : public ByteReader {
 public:
  using ByteReader::ByteReader;

  int line() { return static_cast<int>(u32()); }
  // A ${...} that does not parse was not written by Encoder: a bad entry.
  TemplateString template_string() {
    try {
      return TemplateString::parse(str());
    } catch (const TemplateSyntaxError&) {
      fail();
      return TemplateString::literal("");
    }
  }
  std::vector<DeviceFileEntry> entries() {
    std::vector<DeviceFileEntry> v;
    for (std::uint32_t i = count(); i > 0 && ok(); --i) {
      TemplateString value = template_string();
      int at = line();
      v.push_back(DeviceFileEntry{std::move(value), at, str()});
    }
    return v;
  }
  std::vector<TemplateString> templates() {
    std::vector<TemplateString> v;
    for (std::uint32_t i = count(); i > 0 && ok(); --i) v.push_back(template_string());
    return v;
  }
  std::optional<bool> maybe_flag() {
    bool set = flag();
    bool value = flag();
    return set ? std::optional<bool>(value) : std::nullopt;
  }
  ListBlock block() {
    ListBlock b;
    for (auto& list : b.lists) list = entries();
    b.aot_mode = maybe_flag();
    b.compile_only = maybe_flag();
    return b;
  }
  std::map<std::string, LayerDef> layers() {
    std::map<std::string, LayerDef> m;
    for (std::uint32_t i = count(); i > 0 && ok(); --i) {
      LayerDef& l = m[str()];
      l.name = str(), l.description = str();
      l.extends = string_list();
      l.lists = block();
      l.line = line();
    }
    return m;
  }
  OptionList option_list() {
    std::uint32_t n = u32();
    if (n >= kOptionListCount) fail();
    return ok() ? static_cast<OptionList>(n) : OptionList::cflags;
  }
  std::vector<BaseEdit> edits() {
    std::vector<BaseEdit> v;
    for (std::uint32_t i = count(); i > 0 && ok(); --i) {
      BaseEdit e;
      e.list = option_list();
      e.value = str();
      bool replaced = flag();
      std::string replacement = str();
      if (replaced) e.replacement = std::move(replacement);
      e.line = line();
      v.push_back(std::move(e));
    }
    return v;
  }
  ListOverride list_override() {
    ListOverride o;
    for (auto& list : o.lists)
      if (flag()) list = entries();
    return o;
  }
  std::shared_ptr<const PackageSpec> package() {
    auto p = std::make_shared<PackageSpec>();
    p->name = str(), p->root = template_string(), p->version_file = str(), p->library = str();
    p->source_checkout_mark = str(), p->toolkit = str();
    p->toolkit_version_files = templates();
    p->line = line();
    return p;
  }
  std::shared_ptr<const PluginSpec> plugin() {
    auto p = std::make_shared<PluginSpec>();
    p->description = str(), p->backend_env = str(), p->release_env = str();
    p->default_backend = str();
    for (std::uint32_t i = count(); i > 0 && ok(); --i) {
      PluginBackend& b = p->backends[str()];
      b.name = str(), b.description = str(), b.note = str();
      b.base = edits();
      b.patches_device = flag();
      b.unless_env = string_map();
      b.every_device = block();
      b.line = line();
    }
    for (std::uint32_t i = count(); i > 0 && ok(); --i) {
      PluginRelease r;
      r.version = str(), r.cann = str(), r.source = str();
      r.named = flag();
      r.versions = string_list();
      r.torch_lines = string_list();
      bool has_backends = flag();
      std::vector<std::string> backends = string_list();
      if (has_backends) r.backends = std::move(backends);
      for (std::uint32_t j = count(); j > 0 && ok(); --j) {
        std::string backend = str();
        r.unless_env[backend] = string_map();
      }
      r.every_device = list_override();
      r.device = list_override();
      r.notes = string_map();
      for (std::uint32_t j = count(); j > 0 && ok(); --j) {
        std::string backend = str();
        r.base[backend] = edits();
      }
      r.line = line();
      p->releases.push_back(std::move(r));
    }
    p->line = line();
    return p;
  }
};

}  // namespace

std::string encode_device_file(const DeviceFile& f) {
  Encoder w;
  w.str(f.path), w.str(f.device), w.str(f.description);
  w.u32(f.mode == RegistrationMode::extend ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(f.mode_line));
  w.strings(f.env_help);
  w.block(f.lists);
  w.u32(static_cast<std::uint32_t>(f.when.size()));
  for (const ListBlock& b : f.when) w.block(b);
  w.flag(f.exec.has_value());
  if (f.exec) {
    w.templates(f.exec->command);
    w.f64(f.exec->timeout_s);
    w.u32(static_cast<std::uint32_t>(f.exec->line));
  }
  w.layers(f.layers);
  w.layers(f.backends);
  w.str(f.default_backend), w.str(f.launcher);
  w.flag(f.check_program_trust);
  w.str(f.remote_cache_address);
  w.flag(f.package != nullptr);
  if (f.package) w.package(*f.package);
  w.flag(f.plugin != nullptr);
  if (f.plugin) w.plugin(*f.plugin);
  return w.take();
}

std::optional<DeviceFile> decode_device_file(const std::string& bytes) {
  Decoder r(bytes);
  DeviceFile f;
  f.path = r.str(), f.device = r.str(), f.description = r.str();
  std::uint32_t mode = r.u32();
  if (mode > 1) r.fail();
  f.mode = mode == 1 ? RegistrationMode::extend : RegistrationMode::replace;
  f.mode_line = r.line();
  f.env_help = r.string_map();
  f.lists = r.block();
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) f.when.push_back(r.block());
  if (r.flag()) {
    ExecSpec spec;
    spec.command = r.templates();
    spec.timeout_s = r.f64();
    spec.line = r.line();
    f.exec = std::move(spec);
  }
  f.layers = r.layers();
  f.backends = r.layers();
  f.default_backend = r.str(), f.launcher = r.str();
  f.check_program_trust = r.flag();
  f.remote_cache_address = r.str();
  if (r.flag()) f.package = r.package();
  if (r.flag()) f.plugin = r.plugin();
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
