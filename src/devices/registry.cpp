#include "kbuild/registry.hpp"

#include <algorithm>

#include "devices/builtin_devices.hpp"
#include "kbuild/error.hpp"

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
