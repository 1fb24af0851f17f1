
#include "devices/registry.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "devices/profile.hpp"
#include "kbuild/error.hpp"
#include "site/search.hpp"
#include "util/file_system.hpp"

namespace kbuild {

namespace {

std::string mode_name(RegistrationMode mode) {
  return mode == RegistrationMode::extend ? "extend" : "replace";
}

}  // namespace

Registry::Registry() : builtins_(builtin_providers()) {}

void Registry::register_device(const std::string& name, std::shared_ptr<const Provider> provider) {
  auto it = registered_.find(name);
  if (it != registered_.end()) {
    warnings_.push_back("device '" + name + "' is already registered (from " +
                        it->second.provider->source() + "), overwriting with " +
                        provider->source());
    auto overridden = std::move(it->second.overridden);
    overridden.push_back(it->second.provider->source());
    it->second = Registration{std::move(provider), std::move(overridden)};
    return;
  }
  registered_.emplace(name, Registration{std::move(provider), {}});
}

bool Registry::is_builtin(const std::string& name) const {
  return std::any_of(builtins_.begin(), builtins_.end(),
                     [&](const auto& b) { return b.first == name; });
}

bool Registry::is_registered(const std::string& name) const {
  return registered_.count(name) > 0;
}

std::string Registry::launcher_for(const std::string& name) const {
  auto it = registered_.find(name);
  return it == registered_.end() ? "" : it->second.provider->launcher();
}

const DeviceFile* Registry::device_file(const std::string& name) const {
  auto it = registered_.find(name);
  return it == registered_.end() ? nullptr : it->second.provider->device_file();
}

bool Registry::has_backends(const std::string& name) const {
  auto it = registered_.find(name);
  return it != registered_.end() && !it->second.provider->backends().empty();
}

OptionsResult Registry::resolve(const DeviceQuery& query, const ResolveContext& ctx,
                                bool strict) const {
  const std::string& name = query.device_type;
  // The built-in branch runs first, exactly as in Inductor's hook: its
  // failures (xpu without ze_loader) surface even when `name` is registered.
  OptionsResult result;
  auto builtin = std::find_if(builtins_.begin(), builtins_.end(),
                              [&](const auto& b) { return b.first == name; });
  if (builtin != builtins_.end())
    result = builtin->second->options(query, ctx);
  else
    result = default_device_options(ctx);

  auto reg = registered_.find(name);
  if (!query.backend.empty() && reg == registered_.end())
    throw Error(ErrorKind::usage, "device '" + name + "' has no backends; --backend " +
                                      query.backend + " needs a device file that defines them");
  if (reg != registered_.end()) {
    OptionsResult provided = reg->second.provider->options(query, ctx);
    if (reg->second.provider->mode() == RegistrationMode::replace) return provided;
    result.options.append(provided.options);
    result.notes.insert(result.notes.end(), provided.notes.begin(), provided.notes.end());
    return result;
  }
  if (builtin == builtins_.end()) {
    std::string known;
    for (const DeviceListing& d : list()) known += (known.empty() ? "" : ", ") + d.name;
    if (strict)
      throw Error(ErrorKind::usage, "unknown device '" + name + "' (--strict); known devices: " +
                                        known + "; register it with a device file (see README)");
    result.notes.push_back("unknown device '" + name +
                           "': no device-specific options (as Inductor); known: " + known);
  }
  return result;
}

std::vector<DeviceListing> Registry::list() const {
  std::vector<DeviceListing> out;
  for (const auto& [name, provider] : builtins_) {
    auto reg = registered_.find(name);
    if (reg == registered_.end())
      out.push_back({name, provider->kind(), provider->source(), "", {}, {}});
  }
  for (const auto& [name, reg] : registered_) {
    auto overridden = reg.overridden;
    if (is_builtin(name) && reg.provider->mode() == RegistrationMode::replace)
      overridden.insert(overridden.begin(), "built-in");
    out.push_back({name, reg.provider->kind(), reg.provider->source(),
                   mode_name(reg.provider->mode()), overridden, reg.provider->backends()});
  }
  return out;
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

namespace {

Origin builtin_origin(const std::string& device) {
  return Origin{Layer::device, "built-in " + device, "", 0};
}

// The real directory holding libcudart_static.a under `dir` (the dir itself
// first, then its subdirectories in name order), symlinks resolved.
std::optional<std::string> find_cudart_static(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "libcudart_static.a", ec)) {
    std::string real = fs::canonical(dir, ec).string();
    return real;
  }
  std::vector<fs::path> found;
  for (auto it = fs::recursive_directory_iterator(dir,
                                                  fs::directory_options::follow_directory_symlink |
                                                      fs::directory_options::skip_permission_denied,
                                                  ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 8) it.disable_recursion_pending();
    if (it->path().filename() == "libcudart_static.a") found.push_back(it->path());
  }
  if (found.empty()) return std::nullopt;
  std::sort(found.begin(), found.end());
  return fs::canonical(found.front().parent_path(), ec).string();
}

// Links torch's library for a device when torch is known; otherwise says so.
void add_torch_library(OptionsResult& r, const ResolveContext& ctx, const std::string& library,
                       const std::string& device, const Origin& origin) {
  if (ctx.paths.torch_root)
    r.options.add(OptionList::libraries, library, origin);
  else
    r.notes.push_back("torch not found: -l" + library + " left out of the " + device + " options");
}

// Adds the profile's `list` of libraries ("torch" ones need torch found;
// without it each is left out with a note naming `where`).
void add_profile_libraries(OptionsResult& r, const ResolveContext& ctx, const Profile& profile,
                           const std::string& list, const std::string& origin_name,
                           const std::string& where) {
  auto it = profile.lists.find(list);
  if (it == profile.lists.end()) return;
  ProfileFacts facts;
  facts.torch = ctx.paths.torch_root.has_value();
  for (const ProfileEntry& e : it->second) {
    bool needs_torch = std::count(e.when.begin(), e.when.end(), "torch") > 0;
    if (needs_torch && !facts.torch)
      r.notes.push_back("torch not found: -l" + e.value + " left out of " + where);
    else if (profile_applies(profile, e, facts))
      r.options.add(OptionList::libraries, e.value,
                    Origin{Layer::device, origin_name, e.file, e.line});
  }
}

class BuiltinProvider : public Provider {
 public:
  std::string source() const override { return "built-in"; }
  std::string kind() const override { return "built-in"; }
};

class CpuProvider : public BuiltinProvider {
 public:
  OptionsResult options(const DeviceQuery&, const ResolveContext& ctx) const override {
    return default_device_options(ctx);
  }
};

class CudaProvider : public BuiltinProvider {
 public:
  OptionsResult options(const DeviceQuery&, const ResolveContext& ctx) const override {
    return ctx.paths.torch_is_rocm ? rocm(ctx) : cuda(ctx);
  }

 private:
  static OptionsResult cuda(const ResolveContext& ctx) {
    const Origin origin = builtin_origin("cuda");
    const std::string& home = ctx.paths.cuda_home;
    OptionsResult r = default_device_options(ctx);
    BuildOptions& o = r.options;
    o.add(OptionList::definitions, " USE_CUDA", origin);

    if (home + "/include" != "/usr/include")
      o.add(OptionList::include_dirs, home + "/include", origin);
    if (auto inc = ctx.env.get_nonempty("CUDA_INC_PATH"); inc && *inc != "/usr/include")
      o.add(OptionList::include_dirs, *inc, origin);
    auto cudnn = ctx.env.get_nonempty("CUDNN_HOME");
    if (!cudnn) cudnn = ctx.env.get_nonempty("CUDNN_PATH");
    if (cudnn) o.add(OptionList::include_dirs, *cudnn + "/include", origin);

    std::string lib_dir = "lib64";
    if (!is_directory(home + "/lib64") && is_directory(home + "/lib")) lib_dir = "lib";
    std::vector<std::string> dirs{home + "/" + lib_dir};
    if (cudnn) dirs.push_back(*cudnn + "/" + lib_dir);
    const Profile& profile = ctx.profile ? *ctx.profile : *default_profile();
    if (ctx.paths.cuda_home_explicit) {
      // Inductor's _transform_cuda_paths: lib64 -> the real dir of
      // libcudart_static.a, plus its stubs/ appended at the end.
      std::vector<std::string> stubs;
      for (std::string& d : dirs) {
        if (d.rfind(home, 0) != 0) continue;
        if (auto real = find_cudart_static(d)) {
          d = *real;
          if (profile.cuda_stubs && is_directory(*real + "/stubs"))
            stubs.push_back(*real + "/stubs");
        }
      }
      dirs.insert(dirs.end(), stubs.begin(), stubs.end());
    }
    for (const std::string& d : dirs) o.add(OptionList::libraries_dirs, d, origin);

    add_profile_libraries(r, ctx, profile, "cuda.libraries", "built-in cuda", "the cuda options");
    return r;
  }

  // Not measured on a ROCm machine: follows torch 2.11's code path.
  static OptionsResult rocm(const ResolveContext& ctx) {
    const Origin origin = builtin_origin("cuda");
    const std::string& home = ctx.paths.rocm_home;
    OptionsResult r = default_device_options(ctx);
    BuildOptions& o = r.options;
    o.add(OptionList::definitions, " USE_ROCM", origin);
    o.add(OptionList::include_dirs, home + "/include", origin);
    o.add(OptionList::libraries_dirs, home + "/lib", origin);
    add_torch_library(r, ctx, "torch_hip", "cuda (ROCm)", origin);
    o.add(OptionList::definitions, " __HIP_PLATFORM_AMD__", origin);
    return r;
  }
};

class XpuProvider : public BuiltinProvider {
 public:
  OptionsResult options(const DeviceQuery&, const ResolveContext& ctx) const override {
    const Origin origin = builtin_origin("xpu");
    auto sycl = ctx.env.get_nonempty("SYCL_HOME");
    if (!sycl) sycl = ctx.env.get_nonempty("CMPLR_ROOT");
    if (!sycl)
      throw Error(ErrorKind::provider,
                  "device 'xpu' (built-in): SYCL runtime is not detected; set SYCL_HOME (or "
                  "CMPLR_ROOT) to the oneAPI compiler root, e.g. run oneAPI's setvars.sh");
    OptionsResult r = default_device_options(ctx);
    BuildOptions& o = r.options;
    o.add(OptionList::definitions, " USE_XPU", origin);
    o.add(OptionList::include_dirs, *sycl + "/include", origin);
    o.add(OptionList::include_dirs, *sycl + "/include/sycl", origin);
    o.add(OptionList::libraries_dirs, *sycl + "/lib", origin);
    o.add(OptionList::cflags, "Wno-comment", origin);
    if (!find_shared_library("ze_loader", ctx.env))
      throw Error(ErrorKind::provider,
                  "device 'xpu' (built-in): libze_loader.so not found on the library path: the "
                  "Intel GPU driver is not properly installed (see "
                  "https://github.com/pytorch/pytorch?tab=readme-ov-file#intel-gpu-support)");
    o.add(OptionList::libraries, "ze_loader", origin);
    o.add(OptionList::libraries, "sycl", origin);
    add_torch_library(r, ctx, "torch_xpu", "xpu", origin);
    return r;
  }
};

class MpsProvider : public BuiltinProvider {
 public:
  OptionsResult options(const DeviceQuery&, const ResolveContext& ctx) const override {
    OptionsResult r = default_device_options(ctx);
    r.options.add(OptionList::definitions, " USE_MPS", builtin_origin("mps"));
    return r;
  }
};

}  // namespace

OptionsResult default_device_options(const ResolveContext& ctx) {
  OptionsResult r;
  if (ctx.paths.torch_root)
    r.options.add(OptionList::libraries_dirs, *ctx.paths.torch_root + "/lib",
                  Origin{Layer::device, "default device options", "", 0});
  const Profile& profile = ctx.profile ? *ctx.profile : *default_profile();
  add_profile_libraries(r, ctx, profile, "device.libraries", "default device options",
                        "the device options");
  return r;
}

std::vector<std::pair<std::string, std::shared_ptr<const Provider>>> builtin_providers() {
  return {{"cpu", std::make_shared<CpuProvider>()},
          {"cuda", std::make_shared<CudaProvider>()},
          {"xpu", std::make_shared<XpuProvider>()},
          {"mps", std::make_shared<MpsProvider>()}};
}

}  // namespace kbuild
