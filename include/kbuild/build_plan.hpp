// From a request to the exact command: layers appended base -> torch ->
// device -> user, finalized as Inductor does, then assembled.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/assemble.hpp"
#include "kbuild/build_request.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/plugins.hpp"
#include "kbuild/profile.hpp"
#include "kbuild/registry.hpp"

namespace kbuild {

struct BuildPlan {
  OutputKind kind = OutputKind::shared_library;
  std::optional<std::string> include_pch;
  BuildOptions options;  // finalized, all layers
  Command command;
  std::string output;
  std::vector<std::string> notes;
  ProcessPlugins plugins;                  // what was active (report, explain)
  std::shared_ptr<const Profile> profile;  // the Inductor profile used
};

// Throws Error (usage/config/provider). `--isa auto` runs the ISA probes
// (isa_probe.hpp): cached, so a later plan compiles nothing.
BuildPlan plan_build(const BuildRequest& request, const Registry& registry,
                     const ResolveContext& ctx);

}  // namespace kbuild
