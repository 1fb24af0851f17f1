#include "devices/plugin_status.hpp"
#include "util/printable.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "devices/device_file_provider.hpp"
#include "devices/list_provider.hpp"
#include "devices/plugin_file.hpp"
#include "devices/plugin_release.hpp"
#include "devices/plugin_spec.hpp"
#include "site/package_version.hpp"

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

std::string describe(const PluginStatus& s) {
  std::string package = s.package.empty() ? "plugin " + s.plugin : s.package;
  std::string text = package + " " + (s.installed.empty() ? "(version unknown)" : s.installed);
  if (!s.release.empty() && (s.release != s.installed || !s.release_from.empty()))
    text += " (reproduced as " + s.release +
            (s.release_from.empty() ? "" : ", named by " + s.release_from) + ")";
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
