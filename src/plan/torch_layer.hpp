// The torch layer: torch macros, ISA, OpenMP, Python and torch paths and
// libraries (Inductor's CppTorchOptions on top of the base layer), as the
// Inductor profile lists them.
#pragma once

#include <memory>

#include "kbuild/isa.hpp"
#include "kbuild/options_result.hpp"
#include "kbuild/paths.hpp"
#include "kbuild/profile.hpp"

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
