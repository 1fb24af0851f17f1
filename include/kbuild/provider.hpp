// A device provider: the upstream callback
// (device_type, aot_mode, compile_only) -> 7 lists, as an interface.
#pragma once

#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/options_result.hpp"
#include "kbuild/paths.hpp"

namespace kbuild {

struct DeviceFile;

struct DeviceQuery {
  std::string device_type;
  bool aot_mode = false;
  bool compile_only = false;
  std::string backend = {};  // empty: the device's default backend, if any
};

// A backend a provider offers, with the layers it applies in order.
struct BackendInfo {
  std::string name;
  std::string description;
  std::vector<std::string> chain;  // layer names, parents first, ending with the backend
  bool is_default = false;
};

// What providers may read: machine paths and the environment.
struct Profile;

struct ResolveContext {
  const Paths& paths;
  const Environment& env;
  const Profile* profile = nullptr;  // the Inductor profile; null: default_profile()
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
  // A short description of what it is ("built-in", "config", "exec").
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
