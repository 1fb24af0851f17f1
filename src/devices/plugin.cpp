
#include "devices/plugin.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "site/site.hpp"
#include "util/text.hpp"

namespace kbuild {

namespace {

std::string backend_names(const PluginSpec& plugin) {
  std::string names;
  for (const auto& [name, b] : plugin.backends) names += (names.empty() ? "" : ", ") + name;
  return names;
}

const DeviceFile& plugin_file(const Registry& registry, const std::string& name) {
  const DeviceFile* file = registry.device_file(name);
  if (!file || !file->plugin) {
    std::string known;
    for (const DeviceListing& d : registry.list()) {
      const DeviceFile* f = registry.device_file(d.name);
      if (f && f->plugin) known += (known.empty() ? "" : ", ") + d.name;
    }
    throw Error(ErrorKind::usage,
                "unknown plugin '" + name + "' (--plugin): " +
                    (file ? "its device file " + file->path + " has no 'plugin' section"
                          : std::string("no device file registers it")) +
                    "; plugins: " + (known.empty() ? "none" : known));
  }
  return *file;
}

// --backend when it is meant for this plugin, else its variable, else its default.
void choose_backend(const PluginRequest& request, bool device_has_backends, const Environment& env,
                    ActivePlugin& p, bool& took_backend) {
  const PluginSpec& spec = *p.file->plugin;
  if (!request.backend.empty() && (p.name == request.device || !device_has_backends)) {
    p.backend = request.backend;
    p.backend_from = "--backend";
    took_backend = took_backend || !device_has_backends;
  } else if (auto value =
                 spec.backend_env.empty() ? std::nullopt : env.get_nonempty(spec.backend_env)) {
    p.backend = *value;
    p.backend_from = spec.backend_env;
  } else {
    p.backend = spec.default_backend;
    p.backend_from = "default";
  }
  if (p.backend.empty())
    throw Error(ErrorKind::usage, "plugin '" + p.name + "' (" + p.file->path +
                                      ") names no default backend: choose one with --backend (" +
                                      backend_names(spec) + ")");
  const std::string from =
      p.backend_from == "--backend" ? std::string() : p.backend_from + "=" + p.backend + ": ";
  auto state = spec.backends.find(p.backend);
  if (state == spec.backends.end())
    throw Error(ErrorKind::usage, from + "device '" + p.name + "' has no backend '" + p.backend +
                                      "' (backends: " + backend_names(spec) + ", in " +
                                      p.file->path + ")");
  // A release guessed for want of a version cannot say a backend is missing.
  static const std::optional<std::vector<std::string>> every_backend;
  const auto& release_backends =
      p.release && !p.release_guessed ? p.release->backends : every_backend;
  if (release_backends && std::find(release_backends->begin(), release_backends->end(),
                                    p.backend) == release_backends->end())
    throw Error(
        ErrorKind::usage,
        from + "device '" + p.name + "' has no backend '" + p.backend + "' in release " +
            p.release->version + " (its backends: " + comma_joined(*release_backends) + ", in " +
            p.file->path + "): choose one of them" +
            (spec.release_env.empty() ? std::string()
                                      : ", or name another release with " + spec.release_env));
  p.state = &state->second;
}

// The variables that switch the backend's device-options patch off, as of
// the release reproduced.
const std::map<std::string, std::string>& patch_switches(const ActivePlugin& p) {
  if (p.release) {
    auto own = p.release->unless_env.find(p.backend);
    if (own != p.release->unless_env.end()) return own->second;
  }
  return p.state->unless_env;
}

void choose_patch(const Environment& env, ActivePlugin& p, std::vector<std::string>& notes) {
  p.patches_device = p.state->patches_device;
  const auto& switches = patch_switches(p);
  for (const auto& [var, value] : switches)
    if (p.patches_device && env.get(var) == value) {
      p.patches_device = false;
      p.patch_off_by = var + "=" + value;
    }
  // A variable the backend honours elsewhere, set here, where the release ignores it.
  if (!p.patches_device || !p.release) return;
  for (const auto& [var, value] : p.state->unless_env)
    if (!switches.count(var) && env.get(var) == value)
      notes.push_back("plugin " + p.name + ", backend " + p.backend + " (release " +
                      p.release->version + "): " + var + "=" + value +
                      " is set, but this release ignores it: its device-options patch is "
                      "unconditional");
}

void pick_release(const ResolveContext& ctx, ActivePlugin& out, std::vector<std::string>& notes) {
  const DeviceFile& file = *out.file;
  if (!file.package) return;
  TemplateContext tctx{ctx.env, ctx.paths, device_file_dir(file.path)};
  Expansion root = file.package->root.expand(tctx);
  if (root.value) out.package_root = *root.value;
  if (root.value && !file.package->version_file.empty())
    out.installed =
        read_package_version(*root.value + "/" + file.package->version_file).value_or("");
  ReleaseQuery query{file.package->name, out.installed, "", "", "", file.plugin->release_env};
  if (ctx.paths.torch_root)
    query.torch_version = read_package_version(*ctx.paths.torch_root + "/version.py").value_or("");
  if (!query.named_by.empty()) query.named = ctx.env.get_nonempty(query.named_by).value_or("");
  if (ctx.profile) query.profile_line = ctx.profile->name;
  ReleaseChoice choice = choose_release(*file.plugin, query);
  out.release = choice.release;
  out.release_from = choice.chosen_by;
  out.release_guessed = choice.guessed;
  if (!choice.note.empty()) notes.push_back("plugin " + out.name + ": " + choice.note);
  if (out.release && ctx.profile) {
    std::string note =
        torch_line_note(*out.release, file.package->name, ctx.profile->name, query.torch_version);
    if (!note.empty()) notes.push_back("plugin " + out.name + ": " + note);
  }
}

ActivePlugin activate_one(const Registry& registry, const std::string& name,
                          const PluginRequest& request, const ResolveContext& ctx,
                          ProcessPlugins& out) {
  ActivePlugin p;
  p.name = name;
  p.file = &plugin_file(registry, name);
  pick_release(ctx, p, out.notes);
  choose_backend(request, registry.has_backends(request.device), ctx.env, p, out.took_backend);
  choose_patch(ctx.env, p, out.notes);
  const std::string who = "plugin " + name + ", backend " + p.backend;
  if (!p.state->note.empty()) out.notes.push_back(who + ": " + p.state->note);
  if (p.release) {
    auto note = p.release->notes.find(p.backend);
    if (note != p.release->notes.end())
      out.notes.push_back(who + " (release " + p.release->version + "): " + note->second);
  }
  if (!p.patch_off_by.empty())
    out.notes.push_back(who + ": " + p.patch_off_by +
                        " is set: device options stay Inductor's own (only the base-layer "
                        "changes apply)");
  return p;
}

// The lists of `block` with the release's replacements.
ListBlock with_release(const ListBlock& block, const ListOverride* over) {
  ListBlock out = block;
  if (!over) return out;
  for (std::size_t i = 0; i < kOptionListCount; ++i)
    if (over->lists[i]) out.lists[i] = *over->lists[i];
  return out;
}

std::string where(const ActivePlugin& p, int line) {
  return p.file->path + ":" + std::to_string(line) + ", plugin " + p.name + ", backend " +
         p.backend;
}

OptionsResult patched_device_options(const Registry& registry, const ActivePlugin& p,
                                     DeviceQuery query, const ResolveContext& ctx) {
  OptionsResult r;
  TemplateContext tctx{ctx.env, ctx.paths, device_file_dir(p.file->path)};
  add_device_file_block(
      *p.file, with_release(p.state->every_device, p.release ? &p.release->every_device : nullptr),
      tctx, "plugin " + p.name + " backend " + p.backend + " (every device)", r);
  if (query.device_type != p.name) return r;
  // Its own device also gets the file's lists, as of the release reproduced.
  DeviceFile own = *p.file;
  own.lists = with_release(own.lists, p.release ? &p.release->device : nullptr);
  // The device's own backend is the plugin's; a device without backends gets none.
  query.backend = registry.has_backends(p.name) ? p.backend : "";
  OptionsResult device = make_provider(std::move(own))->options(query, ctx);
  r.options.append(device.options);
  r.notes.insert(r.notes.end(), device.notes.begin(), device.notes.end());
  return r;
}

// The backend's base edits, or the reproduced release's own for that backend.
const std::vector<BaseEdit>& base_edits_of(const ActivePlugin& p) {
  if (p.release) {
    auto own = p.release->base.find(p.backend);
    if (own != p.release->base.end()) return own->second;
  }
  return p.state->base;
}

}  // namespace

ProcessPlugins activate_plugins(const Registry& registry, const PluginRequest& request,
                                const ResolveContext& ctx) {
  std::vector<std::string> names;
  const DeviceFile* device_file = registry.device_file(request.device);
  if (device_file && device_file->plugin) names.push_back(request.device);
  for (const std::string& n : request.names)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  ProcessPlugins out;
  for (const std::string& name : names)
    out.active.push_back(activate_one(registry, name, request, ctx, out));
  return out;
}

void apply_base_edits(const ProcessPlugins& plugins, BuildOptions& base) {
  for (const ActivePlugin& p : plugins.active) {
    for (const BaseEdit& edit : base_edits_of(p)) {
      if (edit.replacement)
        base.replace(edit.list, edit.value, *edit.replacement,
                     Origin{Layer::base, "plugin " + p.name + " backend " + p.backend, p.file->path,
                            edit.line},
                     "replaced by " + where(p, edit.line));
      else
        base.drop(edit.list, edit.value, "dropped by " + where(p, edit.line));
    }
  }
}

OptionsResult device_options_in_process(const Registry& registry, const ProcessPlugins& plugins,
                                        DeviceQuery query, const ResolveContext& ctx, bool strict) {
  // Like monkey-patching Inductor's hook: the last patch wins.
  for (auto p = plugins.active.rbegin(); p != plugins.active.rend(); ++p)
    if (p->patches_device) return patched_device_options(registry, *p, query, ctx);
  for (const ActivePlugin& p : plugins.active)
    if (p.name == query.device_type) return default_device_options(ctx);
  if (plugins.took_backend) query.backend.clear();
  return registry.resolve(query, ctx, strict);
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// The value of the first "Version=..." line (any case) of `path`.
std::string version_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  for (int n = 0; n < 200 && std::getline(in, line); ++n) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (key == "version") return line.substr(eq + 1);
  }
  return "";
}

std::string toolkit_version(const PackageSpec& package, const ResolveContext& ctx,
                            const std::string& config_dir) {
  TemplateContext tctx{ctx.env, ctx.paths, config_dir};
  for (const TemplateString& file : package.toolkit_version_files) {
    Expansion x = file.expand(tctx);
    if (!x.value) continue;  // its variable is unset: no toolkit there
    std::string v = version_line(*x.value);
    if (!v.empty()) return v;
  }
  return "";
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// What switches a backend's device-options patch off in release `r`.
const std::map<std::string, std::string>& switches_in(const PluginRelease* r,
                                                      const std::string& name,
                                                      const PluginBackend& backend) {
  if (r) {
    auto own = r->unless_env.find(name);
    if (own != r->unless_env.end()) return own->second;
  }
  return backend.unless_env;
}

// The release's backends, torch lines, and which switches it honours.
void release_facts(const ActivePlugin& p, PluginStatus& s) {
  const PluginSpec& spec = *p.file->plugin;
  const PluginRelease* r = p.release;
  s.release_from = p.release_from;
  if (r && r->backends) {
    s.backends = *r->backends;
  } else {
    for (const auto& [name, b] : spec.backends) s.backends.push_back(name);
  }
  if (r) s.torch_lines = r->torch_lines;
  for (const auto& [name, b] : spec.backends)
    for (const auto& [var, value] : b.unless_env) s.honoured.emplace(var, false);
  for (const std::string& name : s.backends)
    for (const auto& [var, value] : switches_in(r, name, spec.backends.at(name)))
      s.honoured[var] = true;
}

}  // namespace

PluginStatus plugin_status(const ActivePlugin& p, const ResolveContext& ctx) {
  PluginStatus s;
  s.plugin = p.name;
  s.package_root = p.package_root;
  s.installed = p.installed;
  s.release = p.release ? p.release->version : "";
  s.backend = p.backend;
  s.backend_from = p.backend_from;
  s.patches_device = p.patches_device;
  s.patch_off_by = p.patch_off_by;
  if (const PackageSpec* package = p.file->package.get()) {
    s.package = package->name;
    s.toolkit = package->toolkit;
    s.toolkit_version = toolkit_version(*package, ctx, device_file_dir(p.file->path));
  }
  release_facts(p, s);
  for (const auto& [name, b] : p.file->plugin->backends)
    for (const auto& [var, value] : b.unless_env) s.switches[var] = ctx.env.get(var);
  if (ctx.paths.torch_root)
    s.torch_version = read_package_version(*ctx.paths.torch_root + "/version.py").value_or("");
  return s;
}

namespace {

// The backend, the device-options patch, the toolkit, the release's
// backends and the switches honoured, as describe() appends them.
std::string describe_state(const PluginStatus& s) {
  std::string text;
  text += ", backend " + s.backend + " (" +
          (s.backend_from == "default" ? "default" : "from " + s.backend_from) + ")";
  text += s.patches_device         ? ", device options patched"
          : s.patch_off_by.empty() ? ", Inductor's own device options"
                                   : ", device options not patched (" + s.patch_off_by + ")";
  if (!s.toolkit.empty())
    text += ", " + s.toolkit + " " + (s.toolkit_version.empty() ? "unknown" : s.toolkit_version);
  if (!s.backends.empty())
    text += "; backends" +
            (s.release.empty() ? std::string()
                               : " of release " + s.release +
                                     (s.torch_lines.empty()
                                          ? std::string()
                                          : " (for torch " + comma_joined(s.torch_lines) + ")")) +
            ": " + comma_joined(s.backends);
  for (const auto& [var, on] : s.honoured)
    text +=
        "; " + var + (on ? " honoured" : " ignored (the device-options patch is unconditional)");
  return text;
}

}  // namespace

std::string describe(const PluginStatus& s) {
  std::string package = s.package.empty() ? "plugin " + s.plugin : s.package;
  // A package that was not found is not installed here: what follows is
  // what a build would reproduce, not what this machine has.
  if (!s.package.empty() && s.package_root.empty() && s.installed.empty()) {
    std::string text = s.package + " not installed";
    if (!s.release.empty())
      text += " (a build reproduces " + s.release +
              (s.release_from.empty() ? "" : ", named by " + s.release_from) + ")";
    return text + describe_state(s);
  }
  std::string text = package + " " + (s.installed.empty() ? "(version unknown)" : s.installed);
  if (!s.release.empty() && (s.release != s.installed || !s.release_from.empty()))
    text += " (reproduced as " + s.release +
            (s.release_from.empty() ? "" : ", named by " + s.release_from) + ")";
  return text + describe_state(s);
}

std::vector<std::string> plugin_warnings(const PluginStatus& s, const DeviceFile& file) {
  std::vector<std::string> out;
  const PackageSpec* package = file.package.get();
  if (package && !s.package_root.empty() && !package->library.empty() &&
      !package->source_checkout_mark.empty() && !exists(s.package_root + "/" + package->library) &&
      exists(s.package_root + "/" + package->source_checkout_mark))
    out.push_back(package->name + " at " + s.package_root + " is a source checkout (no " +
                  package->library + ", " + package->source_checkout_mark +
                  " beside it): it shadows the installed package, so builds use the wrong tree; "
                  "run from another directory or give --torch-npu-root");
  // The release's torch lines; without one, the installed version's own line.
  std::vector<std::string> lines = s.torch_lines;
  if (lines.empty() && !torch_line_of(s.installed).empty())
    lines.push_back(torch_line_of(s.installed));
  const std::string torch_line = torch_line_of(s.torch_version);
  if (!lines.empty() && !torch_line.empty() &&
      std::find(lines.begin(), lines.end(), torch_line) == lines.end()) {
    std::string package =
        s.package + " " + (s.installed.empty() ? "(version unknown)" : s.installed);
    if (!s.release.empty() && s.release != s.installed) package += " (release " + s.release + ")";
    out.push_back("torch " + s.torch_version + " and " + package +
                  " come from different lines (torch " + torch_line + "; " + s.package +
                  " for torch " + joined_lines(lines) + "): install the " + s.package +
                  " release of torch's line, or the torch it is made for");
  }
  return out;
}

}  // namespace kbuild

namespace kbuild {

namespace {

ReleaseChoice chose(const PluginRelease* release, std::string note) {
  ReleaseChoice choice;
  choice.release = release;
  choice.note = std::move(note);
  return choice;
}

std::vector<long> numbers(const std::string& version) {
  return parse_release_version(version).value_or(std::vector<long>{});
}

// A version that names a release: a numbered release's own, or one that a
// named release (master) lists.
struct KnownVersion {
  std::vector<long> numbers;
  std::string text;
  const PluginRelease* release = nullptr;
};

std::vector<KnownVersion> known_versions(const PluginSpec& plugin) {
  std::vector<KnownVersion> out;
  for (const PluginRelease& r : plugin.releases) {
    if (!r.named) out.push_back({numbers(r.version), r.version, &r});
    for (const std::string& v : r.versions) out.push_back({numbers(v), v, &r});
  }
  return out;
}

// A local label ("+cpu", "+git9e73e70") names a build of the same release.
const PluginRelease* exact_release(const PluginSpec& plugin, const std::string& version) {
  const std::string public_version = version.substr(0, version.find('+'));
  for (const KnownVersion& k : known_versions(plugin))
    if (k.text == version || k.text == public_version) return k.release;
  return nullptr;
}

std::string name_of(const KnownVersion& k) {
  return k.release->named ? k.release->version + " (its version " + k.text + ")" : k.text;
}

// The first three numbers: "2.11.0.post1" and "2.11.0rc1" are of line 2.11.0.
std::vector<long> line_of(std::vector<long> numbers) {
  if (numbers.size() > 3) numbers.resize(3);
  return numbers;
}

ReleaseChoice fallback(const PluginSpec& plugin, const std::string& why,
                       const std::string& torch_version, const std::string& profile_line);

// `who` ("torch_npu 2.12.0.post5") is not known: the nearest lower known
// version of its line, else the line's oldest, else the nearest lower of any
// line, else the oldest known.
ReleaseChoice nearest_release(const PluginSpec& plugin, const std::string& who,
                              const std::string& version) {
  const std::vector<long> mine = numbers(version);
  const std::vector<KnownVersion> known = known_versions(plugin);
  const KnownVersion *lower = nullptr, *oldest = nullptr, *line_lower = nullptr,
                     *line_oldest = nullptr;
  for (const KnownVersion& k : known) {
    if (k.numbers < mine && (!lower || k.numbers > lower->numbers)) lower = &k;
    if (!oldest || k.numbers < oldest->numbers) oldest = &k;
    if (line_of(k.numbers) != line_of(mine)) continue;
    if (k.numbers < mine && (!line_lower || k.numbers > line_lower->numbers)) line_lower = &k;
    if (!line_oldest || k.numbers < line_oldest->numbers) line_oldest = &k;
  }
  const std::string head = who + " is not a release kbuild knows: reproducing ";
  if (line_lower)
    return chose(line_lower->release,
                 head + name_of(*line_lower) + ", the nearest lower known release of its line");
  if (line_oldest)
    return chose(line_oldest->release,
                 head + name_of(*line_oldest) + ", the oldest known release of its line");
  if (lower)
    return chose(lower->release, head + name_of(*lower) + ", the nearest lower known release");
  if (!oldest)  // only named releases that list no version
    return fallback(plugin, who + " is not a release kbuild knows", "", "");
  return chose(oldest->release, head + name_of(*oldest) + ", the oldest known release");
}

bool made_for(const PluginRelease& r, const std::string& torch_line) {
  return std::find(r.torch_lines.begin(), r.torch_lines.end(), torch_line) != r.torch_lines.end();
}

// Newer first: a numbered release before a named line, then the highest version.
bool newer(const PluginRelease& a, const PluginRelease& b) {
  auto highest = [](const PluginRelease& r) {
    std::vector<long> best = r.named ? std::vector<long>{} : numbers(r.version);
    for (const std::string& v : r.versions) best = std::max(best, numbers(v));
    return best;
  };
  if (a.named != b.named) return !a.named;
  return highest(a) > highest(b);
}

// The newest known release made for `torch_line` ("" = any); nullptr when none.
const PluginRelease* newest_for(const PluginSpec& plugin, const std::string& torch_line) {
  const PluginRelease* best = nullptr;
  for (const PluginRelease& r : plugin.releases)
    if ((torch_line.empty() || made_for(r, torch_line)) && (!best || newer(r, *best))) best = &r;
  return best;
}

// No version to go by: the newest release made for torch's line, else for
// the line of the Inductor profile in use, else the newest known.
ReleaseChoice fallback(const PluginSpec& plugin, const std::string& why,
                       const std::string& torch_version, const std::string& profile_line) {
  const std::string torch_line = torch_line_of(torch_version);
  const std::string line = torch_line.empty() ? profile_line : torch_line;
  const std::string for_line = torch_line.empty()
                                   ? "Inductor profile " + line + " (torch's version is unknown)"
                                   : "torch " + line;
  const PluginRelease* r = line.empty() ? nullptr : newest_for(plugin, line);
  std::string note;
  if (r) {
    note = why + ": reproducing " + r->version + ", the newest known release for " + for_line;
  } else {
    r = newest_for(plugin, "");
    note = why + ": reproducing " + r->version + ", the newest known release" +
           (line.empty() ? " (torch's version is unknown too)"
                         : " (none is known for " + for_line + ")");
  }
  ReleaseChoice choice = chose(r, note);
  choice.guessed = true;
  return choice;
}

std::string release_names(const PluginSpec& plugin) {
  std::string names;
  for (const PluginRelease& r : plugin.releases) names += (names.empty() ? "" : ", ") + r.version;
  return names;
}

// The release the user named: a release's key, a version one lists, or a
// version kbuild does not know (the nearest lower, with a note).
ReleaseChoice named_release(const PluginSpec& plugin, const ReleaseQuery& q) {
  const std::string who = q.named_by + "=" + q.named;
  ReleaseChoice choice;
  for (const PluginRelease& r : plugin.releases)
    if (r.version == q.named) choice.release = &r;
  if (!choice.release) choice.release = exact_release(plugin, q.named);
  if (!choice.release && parse_release_version(q.named))
    choice = nearest_release(plugin, who, q.named);
  if (!choice.release)
    throw Error(ErrorKind::usage, who + ": " + q.package + " has no release '" + q.named +
                                      "' (releases: " + release_names(plugin) +
                                      "); name one of them, or a version like 2.12.0");
  choice.chosen_by = q.named_by;
  return choice;
}

}  // namespace

std::string torch_line_of(const std::string& version) {
  const std::vector<long> n = numbers(version);
  return n.size() < 2 ? "" : std::to_string(n[0]) + "." + std::to_string(n[1]);
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : ", ") + l;
  return out;
}

ReleaseChoice choose_release(const PluginSpec& plugin, const ReleaseQuery& q) {
  if (plugin.releases.empty()) return {};
  if (!q.named.empty()) return named_release(plugin, q);
  if (q.installed.empty())
    return fallback(plugin,
                    q.package + " release unknown (no " + q.package + " or no version file)",
                    q.torch_version, q.profile_line);
  if (const PluginRelease* r = exact_release(plugin, q.installed)) return chose(r, "");
  if (parse_release_version(q.installed))
    return nearest_release(plugin, q.package + " " + q.installed, q.installed);
  return fallback(plugin, q.package + " " + q.installed + " is not a version kbuild can read",
                  q.torch_version, q.profile_line);
}

std::string torch_line_note(const PluginRelease& release, const std::string& package,
                            const std::string& profile_line, const std::string& torch_version) {
  if (profile_line.empty() || release.torch_lines.empty() || made_for(release, profile_line))
    return "";
  const std::string who = package + " release " + release.version + " is made for torch " +
                          joined_lines(release.torch_lines);
  const std::string torch_line = torch_line_of(torch_version);
  if (torch_line.empty()) return "";  // no torch (or no version): nothing stands in for it
  if (made_for(release, torch_line))
    return who + ", and kbuild has no Inductor profile for torch " + torch_line + ": profile " +
           profile_line + " stands in (torch " + torch_version + ")";
  return who + ", but torch here is " + torch_version + ": its Inductor profile " + profile_line +
         " stands in (different lines: kbuild doctor warns)";
}

}  // namespace kbuild
