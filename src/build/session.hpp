// session: what every build of one process shares: the site (torch, Python, CUDA), the device
// files and their registry, the Inductor profile, and the timings of loading them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "devices/device_file_load.hpp"
#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/request.hpp"
#include "run/build_runner.hpp"
#include "site/site.hpp"

// One process's context, made once before anything runs (the Driver's
// session()): a build planned in it reads the registry and the site.
namespace kbuild {

class Session {
 public:
  // Throws Error (usage, config) for a bad site setting or device file.
  // `files`: what its builds state and read of the world (a test's fake).
  Session(const SessionRequest& options, const Environment& env,
          const FileSystem& files = system_file_system());

  ResolveContext context() const { return ResolveContext{site.paths, env, profile.profile.get()}; }
  // What loading said (missing config dirs, duplicate devices), to print.
  std::vector<std::string> warnings() const;
  // The registry's listing of `device` (nullopt: unknown).
  std::optional<DeviceListing> listing(const std::string& device) const;
  // The backend a build of `query` resolves: the one asked for, else the
  // device file's default ("" when the device has none).
  std::string backend_of(const DeviceQuery& query) const;
  // For a device no one registered: the registered one it is one typo
  // from ("npuu" -> npu), if any.
  std::optional<std::string> device_suggestion(const std::string& device) const;

  const Environment& env;
  const FileSystem& files;
  Site site;
  ProfileChoice profile;  // the Inductor profile of the torch found or named
  Registry registry;
  LoadedDeviceFiles device_files;
  std::vector<StageTiming> timings;
};

// What a listed device is, in a few words: the built-ins' own, else its
// device file's "description" ("" when it has none).
std::string device_description(const DeviceListing& device);

// A device no one registered that is one typo from one that is: the warning
// naming it (upstream's empty device options still apply), or nothing.
// Throws Error (usage) instead with `strict`.
std::optional<std::string> unknown_device_warning(const Session& session, const std::string& device,
                                                  bool strict);

}  // namespace kbuild
