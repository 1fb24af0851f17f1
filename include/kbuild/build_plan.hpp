// From a request to the exact command: layers appended base -> torch ->
// device -> user, finalized as Inductor does, then assembled.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/assemble.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/plugins.hpp"
#include "kbuild/profile.hpp"
#include "kbuild/registry.hpp"

namespace kbuild {

struct BuildRequest {
  DeviceQuery query;  // device type, aot_mode, compile_only
  // --plugin: packages loaded into the process (a device whose file has a
  // plugin section implies its own).
  std::vector<std::string> plugins;
  OutputKind kind = OutputKind::shared_library;
  std::vector<std::string> sources;
  std::string output;  // empty: default_output(sources[0], kind)
  std::string compiler = "g++";
  std::string machine = "x86_64";  // uname -m
  bool strict = false;
  bool min_optimize = false;
  bool debug = false;
  bool warning_all = true;
  bool use_torch = true;  // off: no torch layer (plain C++ kernels)
  // The vector ISA; nullopt: the running CPU's best (as --isa auto), read
  // only when the torch layer applies (a device dry run never reads the CPU).
  std::optional<Isa> isa = Isa{};
  std::vector<std::string> extra_flags;
  std::optional<std::string> include_pch;
  // The Inductor profile (base and torch layers, token order); null: 2.11.
  std::shared_ptr<const Profile> profile;
  // The user layer (-I -D -L -l), appended last.
  std::vector<std::string> include_dirs, definitions, libraries_dirs, libraries;
};

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

// Throws Error (usage/config/provider). `--isa auto` runs the ISA probes
// (isa_probe.hpp): cached, so a later plan compiles nothing.
BuildPlan plan_build(const BuildRequest& request, const Registry& registry,
                     const ResolveContext& ctx);

}  // namespace kbuild
