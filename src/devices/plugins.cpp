#include "kbuild/plugins.hpp"
#include "util/printable.hpp"

#include <algorithm>

#include "devices/builtin_devices.hpp"
#include "devices/device_file_provider.hpp"
#include "devices/list_provider.hpp"
#include "devices/plugin_release.hpp"
#include "devices/plugin_spec.hpp"
#include "kbuild/error.hpp"
#include "kbuild/profile.hpp"
#include "site/package_version.hpp"

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
