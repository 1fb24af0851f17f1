#include "devices/device_file_cache.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "devices/plugin_spec.hpp"
#include "util/parsed_file_cache.hpp"

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
  return a(f.path, f.device, f.description, f.mode, f.mode_line, f.env_help, f.lists, f.when,
           f.exec, f.layers, f.backends, f.default_backend, f.launcher, f.check_program_trust,
           f.remote_cache_address, f.package, f.plugin);
}

static_assert(listed_fields<DeviceFileEntry> == aggregate_fields<DeviceFileEntry>,
              "DeviceFileEntry: a field is missing from its visit()");
static_assert(listed_fields<ListBlock> == aggregate_fields<ListBlock>,
              "ListBlock: a field is missing from its visit()");
static_assert(listed_fields<LayerDef> == aggregate_fields<LayerDef>,
              "LayerDef: a field is missing from its visit()");
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
