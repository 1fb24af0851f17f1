// registry: devices by name: the built-in ones (cpu, cuda, xpu, mps) and those of device files.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kbuild/answers.hpp"
#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/request.hpp"
#include "site/site.hpp"
#include "util/process.hpp"

// A device provider: the upstream callback
// (device_type, aot_mode, compile_only) -> 7 lists, as an interface.
namespace kbuild {

struct DeviceFile;

// What providers may read: machine paths and the environment.
struct Profile;

struct ResolveContext {
  const Paths& paths;
  const Environment& env;
  const Profile* profile = nullptr;  // the Inductor profile; null: default_profile()
  // Runs what a provider asks (pkg-config); null: real processes.
  ProcessRunner* processes = nullptr;
};

// How a registered provider combines with the built-in branch for its name.
enum class RegistrationMode {
  replace,  // the provider's lists are the device options (upstream semantics)
  extend,   // appended after what the built-in branch (or default) returns
};

class Provider {
 public:
  virtual ~Provider() = default;
  // Throws kbuild::Error (provider/config) when it cannot produce options.
  virtual OptionsResult options(const DeviceQuery& query, const ResolveContext& ctx) const = 0;
  // Where it came from, for messages and `kbuild devices` ("built-in", a file).
  virtual std::string source() const = 0;
  // A short description of what it is ("built-in", "device file", "exec").
  virtual std::string kind() const = 0;
  virtual RegistrationMode mode() const { return RegistrationMode::replace; }
  // The compiler launcher its device file asks for ("" for none).
  virtual std::string launcher() const { return ""; }
  // The backends this provider offers (--backend); none by default.
  virtual std::vector<BackendInfo> backends() const { return {}; }
  // The device file it was made from (plugins read its sections); none by default.
  virtual const DeviceFile* device_file() const { return nullptr; }
};

}  // namespace kbuild

// Device name -> provider. Built-in branches run first; registered providers
// are consulted after them, like the upstream registration API.
namespace kbuild {

class Registry {
 public:
  // A registry holding the built-in devices only.
  Registry();

  // Registers `provider` for `name`. Registering a name twice warns once
  // (naming both sources) and the later registration wins.
  void register_device(const std::string& name, std::shared_ptr<const Provider> provider);

  // Warnings produced so far (duplicate registrations); the caller prints them.
  const std::vector<std::string>& warnings() const { return warnings_; }

  bool is_builtin(const std::string& name) const;
  bool is_registered(const std::string& name) const;
  // The launcher the device's file names ("" when none).
  std::string launcher_for(const std::string& name) const;
  // The device file that registered `name`; nullptr for built-ins, exec
  // providers and unknown names.
  const DeviceFile* device_file(const std::string& name) const;
  // Whether the provider for `name` offers backends (--backend).
  bool has_backends(const std::string& name) const;

  // The device layer for `query`. An unknown device gets the default device
  // options (as upstream) plus a note, or an error when `strict`.
  OptionsResult resolve(const DeviceQuery& query, const ResolveContext& ctx, bool strict) const;

  std::vector<DeviceListing> list() const;

 private:
  struct Registration {
    std::shared_ptr<const Provider> provider;
    std::vector<std::string> overridden;
  };
  std::vector<std::pair<std::string, std::shared_ptr<const Provider>>> builtins_;
  std::map<std::string, Registration> registered_;
  std::vector<std::string> warnings_;
};

}  // namespace kbuild

// The device branches Inductor 2.11 hard-codes: cpu, cuda (and ROCm), xpu, mps.
namespace kbuild {

// What every device gets: TORCH_ROOT/lib as a library dir when torch is known.
OptionsResult default_device_options(const ResolveContext& ctx);

// One provider per built-in device, in a fixed order (cpu, cuda, xpu, mps).
std::vector<std::pair<std::string, std::shared_ptr<const Provider>>> builtin_providers();

}  // namespace kbuild
