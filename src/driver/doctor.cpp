
#include "driver/doctor.hpp"

#include <chrono>
#include <filesystem>

#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/plugin.hpp"
#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "site/search.hpp"
#include "site/site.hpp"
#include "util/environment.hpp"
#include "util/file_system.hpp"
#include "util/text.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

void check_compiler(const DoctorInput& in, std::vector<DoctorCheck>& out) {
  DoctorCheck c{"compiler", CheckStatus::ok, in.request.compiler, ""};
  auto path = find_executable(in.request.compiler, in.env);
  if (!path) {
    out.push_back({"compiler", CheckStatus::fail, in.request.compiler + " not found",
                   "install g++ or choose a compiler with --cxx PATH / CXX"});
    return;
  }
  CompilerVersion version = compiler_version(*path, in.env);
  c.detail = *path + ": " + version.first_line;
  if (!version.failure.empty()) {
    c.status = CheckStatus::fail;
    c.hint = "`" + *path + " --version` failed (" + version.failure + ")";
  }
  out.push_back(c);
}

// Each device file on its own, so one broken file does not hide the others.
// `failed`: the sources (a file, or a directory of them) that did not load.
void check_device_files(const DoctorInput& in, std::vector<DoctorCheck>& out, Registry& registry,
                        std::vector<std::string>& failed) {
  for (const DeviceFileSource& source : in.device_file_sources) {
    try {
      Registry one;
      LoadedDeviceFiles loaded =
          register_device_files({source}, one, in.allow_untrusted_device_files);
      for (const std::string& file : loaded.files) {
        DeviceFile f = load_device_file(file);
        f.check_program_trust = !in.allow_untrusted_device_files;
        const std::string device = f.device;
        // A file for a built-in device says which way it changes it (it must: "mode").
        std::string what = "device " + device;
        if (registry.is_builtin(device))
          what += (f.mode == RegistrationMode::extend ? ", extends the built-in "
                                                      : ", replaces the built-in ") +
                  device;
        out.push_back({"device file", CheckStatus::ok, file + " (" + what + ")", ""});
        registry.register_device(device, make_provider(std::move(f)));
      }
      for (const std::string& w : loaded.warnings)
        out.push_back({"config path", CheckStatus::warn, w, "fix KBUILD_CONFIG_PATH"});
    } catch (const Error& e) {
      out.push_back({"device file", CheckStatus::fail, e.what(), "fix what the message names"});
      failed.push_back(source.path);
    }
  }
}

void check_site(const DoctorInput& in, std::vector<DoctorCheck>& out) {
  const Paths& p = in.site.paths;
  if (p.torch_root)
    out.push_back({"torch", is_directory(*p.torch_root) ? CheckStatus::ok : CheckStatus::fail,
                   *p.torch_root, "give the torch package dir with --torch-root"});
  else if (in.request.use_torch)
    out.push_back({"torch", CheckStatus::warn,
                   in.site.discovery
                       ? (in.site.discovery->problem.empty() ? "python has no torch package"
                                                             : in.site.discovery->problem)
                       : "not found",
                   "plain kernels only; give --torch-root DIR (or --no-torch to mean it)"});
  if (p.torch_root) {
    out.push_back(
        {"python include",
         p.python_include && is_directory(*p.python_include) ? CheckStatus::ok : CheckStatus::warn,
         p.python_include.value_or("unknown"), "give --python-include DIR"});
    out.push_back(
        {"python libdir",
         p.python_libdir && is_directory(*p.python_libdir) ? CheckStatus::ok : CheckStatus::warn,
         p.python_libdir.value_or("unknown"), "give --python-libdir DIR"});
  }
}

// A library is resolvable when lib<name>.so or .a is in a -L dir or on the
// system's search path.
bool library_found(const std::string& name, const std::vector<std::string>& dirs,
                   const Environment& env) {
  for (const std::string& d : dirs) {
    for (const std::string& file : library_files(name, d)) {
      std::error_code ec;
      if (fs::exists(file, ec)) return true;
    }
  }
  return find_shared_library(name, env).has_value();
}

// Each active plugin: its versions and state, then what looks wrong about it.
void check_plugins(const BuildPlan& plan, const ResolveContext& ctx,
                   std::vector<DoctorCheck>& out) {
  for (const ActivePlugin& p : plan.plugins.active) {
    PluginStatus status = plugin_status(p, ctx);
    out.push_back({"plugin " + p.name, CheckStatus::ok, describe(status), ""});
    for (const std::string& w : plugin_warnings(status, *p.file))
      out.push_back({"plugin " + p.name, CheckStatus::warn, w, "see docs/npu.md"});
  }
}

// The Inductor profile the build would use, and why.
std::shared_ptr<const Profile> check_profile(const DoctorInput& in, std::vector<DoctorCheck>& out) {
  try {
    ProfileChoice choice = choose_profile_for(profiles_dir(in.env), in.torch_version, in.site.paths,
                                              "", !in.allow_untrusted_device_files);
    out.push_back({"profile", choice.note ? CheckStatus::warn : CheckStatus::ok, describe(choice),
                   choice.note ? *choice.note + "; --torch-version X.Y names another" : ""});
    return choice.profile;
  } catch (const Error& e) {
    out.push_back({"profile", CheckStatus::fail, e.what(), "fix or reinstall the profile file"});
    return nullptr;
  }
}

void check_plan(const DoctorInput& in, const Registry& registry,
                std::shared_ptr<const Profile> profile, std::vector<DoctorCheck>& out) {
  BuildRequest r = in.request;
  r.sources = {"kernel.cpp"};
  r.profile = std::move(profile);
  BuildPlan plan;
  try {
    plan = plan_build(r, registry, ResolveContext{in.site.paths, in.env, r.profile.get()});
  } catch (const Error& e) {
    out.push_back({"device " + r.query.device_type, CheckStatus::fail, e.what(),
                   "fix what the message names, then run kbuild doctor again"});
    return;
  }
  out.push_back({"device " + r.query.device_type, CheckStatus::ok,
                 std::to_string(plan.command.argv.size()) + " arguments resolved", ""});
  check_plugins(plan, ResolveContext{in.site.paths, in.env, r.profile.get()}, out);
  for (const std::string& note : plan.notes) out.push_back({"note", CheckStatus::warn, note, ""});
  for (const Entry& e : plan.options.entries(OptionList::include_dirs))
    if (!is_directory(e.value))
      out.push_back({"include dir", CheckStatus::warn, e.value + " does not exist",
                     "added by " + e.origin.describe()});
  std::vector<std::string> lib_dirs = plan.options.values(OptionList::libraries_dirs);
  for (const Entry& e : plan.options.entries(OptionList::libraries_dirs))
    if (!is_directory(e.value))
      out.push_back({"library dir", CheckStatus::warn, e.value + " does not exist",
                     "added by " + e.origin.describe()});
  for (const Entry& e : plan.options.entries(OptionList::libraries)) {
    bool found = library_found(e.value, lib_dirs, in.env);
    out.push_back({"library " + e.value, found ? CheckStatus::ok : CheckStatus::fail,
                   found ? "found" : "lib" + e.value + ".so not in the -L dirs or the system's",
                   found ? ""
                         : "added by " + e.origin.describe() +
                               "; install it or fix the library dirs (the link would fail)"});
  }
}

}  // namespace

const char* status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::ok: return "ok";
    case CheckStatus::warn: return "warn";
    case CheckStatus::fail: return "fail";
  }
  return "fail";
}

std::vector<DoctorCheck> run_doctor(const DoctorInput& in) {
  std::vector<DoctorCheck> out;
  check_compiler(in, out);
  Registry registry;
  std::vector<std::string> failed;
  check_device_files(in, out, registry, failed);
  check_site(in, out);
  std::shared_ptr<const Profile> profile = check_profile(in, out);
  // A build stops at a broken device file (exit 3): a plan resolved without
  // it would say "ok" about a device that cannot be built.
  if (!failed.empty())
    out.push_back({"device " + in.request.query.device_type, CheckStatus::fail,
                   "not resolved: " + failed.front() +
                       " failed to load above, and a build stops there (exit 3)",
                   "fix the device file, then run kbuild doctor again"});
  else if (profile)
    check_plan(in, registry, profile, out);
  // Paths and device files' texts (env_help) may hold newlines, control
  // characters or bytes that are not UTF-8: each check stays one line.
  for (DoctorCheck& c : out) {
    c.name = printable_line(c.name);
    c.detail = printable_line(c.detail);
    c.hint = printable_line(c.hint);
  }
  return out;
}

std::string doctor_summary(const std::vector<DoctorCheck>& checks) {
  std::size_t counts[3] = {0, 0, 0};
  for (const DoctorCheck& c : checks) ++counts[static_cast<int>(c.status)];
  std::string line = "summary: " + std::to_string(checks.size()) +
                     " checks: " + std::to_string(counts[0]) + " ok, " + std::to_string(counts[1]) +
                     " warnings, " + std::to_string(counts[2]) + " failures";
  switch (worst(checks)) {
    case CheckStatus::ok: return line + "; ready to build";
    case CheckStatus::warn: return line + "; builds may work: see the hints above";
    case CheckStatus::fail: return line + "; fix the failures above before building";
  }
  return line;
}

CheckStatus worst(const std::vector<DoctorCheck>& checks) {
  CheckStatus w = CheckStatus::ok;
  for (const DoctorCheck& c : checks)
    if (static_cast<int>(c.status) > static_cast<int>(w)) w = c.status;
  return w;
}

}  // namespace kbuild

namespace kbuild {
namespace {

// The Inductor profile a plain build would use.
std::string profile_line(const Environment& env) {
  try {
    Site site = resolve_site(SiteRequest{}, env);
    std::string line = describe(choose_profile_for(profiles_dir(env), "", site.paths));
    line.insert(line.begin(), '\n');  // not "\n" + line: g++ 12's false -Wrestrict
    return line;
  } catch (const Error& e) {
    return std::string("\nInductor profile: unknown (") + e.what() + ")";
  }
}

// Each registered plugin as a plain build would find it.
std::string plugin_lines(const Environment& env) {
  std::string text;
  try {
    Site site = resolve_site(SiteRequest{}, env);
    Registry registry;
    register_device_files(device_file_sources(data_dir(env), env, {}), registry, false);
    // With the profile a build would use: without a torch_npu version the
    // release reproduced is the newest for its line.
    ProfileChoice profile = choose_profile_for(profiles_dir(env), "", site.paths);
    ResolveContext ctx{site.paths, env, profile.profile.get()};
    for (const DeviceListing& d : registry.list()) {
      const DeviceFile* file = registry.device_file(d.name);
      if (!file || !file->plugin) continue;
      ProcessPlugins plugins = activate_plugins(registry, PluginRequest{{d.name}, "cpu", ""}, ctx);
      for (const ActivePlugin& p : plugins.active)
        text += "\nplugin " + p.name + ": " + describe(plugin_status(p, ctx));
    }
  } catch (const Error& e) {
    text += std::string("\nplugins: unknown (") + e.what() + ")";
  }
  return text;
}

}  // namespace

std::string version_details(const Environment& env) {
  std::string text = "device files are read from:";
  for (const DeviceFileSource& s : device_file_sources(data_dir(env), env, {}))
    text += "\n  " + s.path;
  text += "\n  then each --device-file FILE";
  return text + profile_line(env) + plugin_lines(env);
}

}  // namespace kbuild
