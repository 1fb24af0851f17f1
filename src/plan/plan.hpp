// plan: the parts only the library uses (the API: kbuild/plan.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kbuild/assemble.hpp"
#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/profile.hpp"
#include "kbuild/registry.hpp"
#include "kbuild/site.hpp"
#include "site/isa_probe.hpp"

// The base layer: toolchain, optimization, warnings (Inductor's CppOptions),
// as the Inductor profile lists them.
namespace kbuild {

struct BaseSettings {
  std::string compiler = "g++";
  bool do_link = true;                     // false for compile-only, precompile, preprocess
  bool min_optimize = false;               // -O1 instead of -O3 (Inductor's wrapper level)
  bool debug = false;                      // -O0 -g (TORCHINDUCTOR_DEBUG_COMPILE)
  bool warning_all = true;                 // -Wall (Inductor's ISA probes turn it off)
  std::vector<std::string> extra_flags;    // joined into one passthrough entry
  std::string machine = "x86_64";          // uname -m, picks -march/-mcpu
  std::shared_ptr<const Profile> profile;  // null: default_profile() (2.11)
  const Environment* env = nullptr;        // AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION
};

// The conditions the profile's entries test, from the settings.
ProfileFacts base_facts(const BaseSettings& settings);

BuildOptions base_layer(const BaseSettings& settings);

}  // namespace kbuild

// The torch layer: torch macros, ISA, OpenMP, Python and torch paths and
// libraries (Inductor's CppTorchOptions on top of the base layer), as the
// Inductor profile lists them.
namespace kbuild {

struct TorchSettings {
  bool aot_mode = false;
  Isa isa;
  std::shared_ptr<const Profile> profile;  // null: default_profile() (2.11)
  ProfileFacts facts;                      // compiler, machine, ... (the base layer's)
};

// Requires paths.torch_root. Python include/libdir entries that are unknown
// are left out with a note.
OptionsResult torch_layer(const TorchSettings& settings, const Paths& paths);

// The profile's macros and flags for `isa` (flags nullopt: no passthrough
// entry; a kind the profile does not list has neither).
std::vector<std::string> profile_isa_macros(const Profile& profile, const Isa& isa);
std::optional<std::string> profile_isa_flags(const Profile& profile, const Isa& isa);

}  // namespace kbuild

// What `--isa auto` and `kbuild isa` probe with: the probe command of the
// request's compiler, profile and paths (isa_probe_command), its cache key,
// the loader, and the ISA classes of the profile's Inductor line.
namespace kbuild {

// Everything isa_probe_command(request, paths, isa, ...) is made from but
// the ISA and the file names (the compiler, machine, profile, paths and
// kbuild itself), as a key; with the ISA: isa_probe_key.
std::string isa_probe_inputs(const BuildRequest& request, const Paths& paths);
std::string isa_probe_key(const std::string& inputs, const Isa& isa);

// Inductor's ISA probe command for `isa` (CppTorchOptions with that ISA and
// warnings off: the base and torch layers), building `source` into the
// shared library `output` with the request's compiler. `paths.torch_root` set.
std::vector<std::string> isa_probe_command(const BuildRequest& request, const Paths& paths,
                                           const Isa& isa, const std::string& source,
                                           const std::string& output);

// The line's VecISA classes are the kinds its profile has flags for; it
// checks an extra when the profile gives the extra's flag, and VecAMX runs
// VNNI's check when the line has a VNNI class (2.11 and later).
IsaLine isa_line(const Profile& profile);

// Settings for `request` (its compiler and profile) on `ctx` (the torch root
// must be known). A missing kbuild-load-check adds a note to `notes`.
IsaProbeSettings isa_probe_settings(const BuildRequest& request, const ResolveContext& ctx,
                                    std::vector<std::string>& notes);

}  // namespace kbuild
