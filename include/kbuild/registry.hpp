// Device name -> provider. Built-in branches run first; registered providers
// are consulted after them, like the upstream registration API.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kbuild/provider.hpp"

namespace kbuild {

struct DeviceListing {
  std::string name;
  std::string kind;    // "built-in", "config", "exec"
  std::string source;  // "built-in" or the device file
  std::string mode;    // "replace" / "extend" for registered devices, "" for built-ins
  std::vector<std::string> overridden;  // sources this registration replaced
  std::vector<BackendInfo> backends;
};

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
