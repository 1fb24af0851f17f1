#include "kbuild/plugin_status.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>

#include "devices/device_file_provider.hpp"
#include "devices/list_provider.hpp"
#include "devices/plugin_file.hpp"
#include "kbuild/package_version.hpp"
#include "kbuild/plugin_spec.hpp"

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
  for (const auto& [name, b] : p.file->plugin->backends)
    for (const auto& [var, value] : b.unless_env) s.switches[var] = ctx.env.get(var);
  if (ctx.paths.torch_root)
    s.torch_version = read_package_version(*ctx.paths.torch_root + "/version.py").value_or("");
  return s;
}

std::string describe(const PluginStatus& s) {
  std::string package = s.package.empty() ? "plugin " + s.plugin : s.package;
  std::string text = package + " " + (s.installed.empty() ? "(version unknown)" : s.installed);
  if (!s.release.empty() && s.release != s.installed) text += " (reproduced as " + s.release + ")";
  text += ", backend " + s.backend + " (" +
          (s.backend_from == "default" ? "default" : "from " + s.backend_from) + ")";
  text += s.patches_device         ? ", device options patched"
          : s.patch_off_by.empty() ? ", Inductor's own device options"
                                   : ", device options not patched (" + s.patch_off_by + ")";
  if (!s.toolkit.empty())
    text += ", " + s.toolkit + " " + (s.toolkit_version.empty() ? "unknown" : s.toolkit_version);
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
  if (!s.installed.empty() && !s.torch_version.empty() &&
      release_line(s.installed) != release_line(s.torch_version))
    out.push_back("torch " + s.torch_version + " and " + s.package + " " + s.installed +
                  " come from different release lines (" + release_line(s.torch_version) + ", " +
                  release_line(s.installed) + "): install the " + s.package +
                  " release of torch's line");
  return out;
}

}  // namespace kbuild
