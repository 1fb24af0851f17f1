// What `--isa auto` and `kbuild isa` probe with: the probe command of the
// request's compiler, profile and paths (isa_probe_command), its cache key,
// the loader, and the ISA classes of the profile's Inductor line.
#pragma once

#include <string>
#include <vector>

#include "kbuild/build_request.hpp"
#include "kbuild/paths.hpp"
#include "kbuild/profile.hpp"
#include "kbuild/provider.hpp"
#include "site/isa_probe.hpp"

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
