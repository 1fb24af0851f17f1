// plan: the plan: the layers (base, torch, ISA), the command, and the steps that run it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/plugin.hpp"
#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "plan/assemble.hpp"
#include "site/isa.hpp"
#include "site/isa_probe.hpp"
#include "site/site.hpp"
#include "util/process.hpp"

// From a request to the exact command: layers appended base -> torch ->
// device -> user, finalized as Inductor does, then assembled.
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
  // Where the dependency file goes (-MD, -MMD; compiler mode), "" when the
  // build writes none: the command's -MF word names it.
  std::string depfile;
};

// Throws Error (usage/config/provider). `--isa auto` runs the ISA probes
// (isa_probe.hpp): cached, so a later plan compiles nothing.
BuildPlan plan_build(const BuildRequest& request, const Registry& registry,
                     const ResolveContext& ctx);

}  // namespace kbuild

// Compiler launchers (ccache, sccache, distcc, icecc, or any command put
// before the compiler). The known ones cache or distribute compiling only,
// so a source-to-library build is split for them: each source compiled to
// an object through the launcher, then one local link. distcc and icecc
// compile -march=native only on this machine unless it is resolved first.
namespace kbuild {

struct Launcher {
  std::vector<std::string> argv;  // empty: none
  // A known compile-only launcher: link steps run locally.
  bool split = false;
  // Why its compiles cannot be observed: it hands them to a daemon
  // (sccache's server) or another machine (distcc, icecc); "" when they run
  // here, under the launcher, where the observer sees them.
  std::string unobservable;
  // Sends compiles to other hosts, where -march=native would mean their CPU.
  bool distributes = false;
  // Replace -march=native in the launched compile steps by what it means on
  // this machine (--resolve-native).
  bool resolve_native = false;
  std::string name() const;  // the program's file name, "" when none
};

// Parses --launcher (or a device file's "launcher"): words split like a
// shell; known names recognised. Throws Error(usage) for an unbalanced quote.
Launcher parse_launcher(const std::string& text);

// The flags -march=native stands for with `compiler` on this machine (from
// `compiler -### -march=native`, run through `processes`); empty when they cannot be read.
std::vector<std::string> resolve_native_flags(const std::string& compiler, const Environment& env,
                                              ProcessRunner& processes = real_processes());

}  // namespace kbuild

// The steps a build runs on a cache miss, as data: decided before anything
// runs, printed by --dry-run, explain and --report, and only executed by
// run_build (clang's Driver -> Compilation -> Job). A plain build is one
// step whose argv is Inductor's; a launcher that only compiles (ccache,
// distcc, ...) gets one compile step per source and a local link; a load
// check is a step of its own.
namespace kbuild {

enum class StepKind { command, load_check };

struct Step {
  StepKind kind = StepKind::command;
  std::vector<std::string> argv;
  // argv positions that name files of the build's own (the result, objects,
  // dependency lists): planned beside the output with names derived from the
  // output's and the sources' names; run in the build's private work
  // directory under the same file names.
  std::vector<std::size_t> work_files;
  std::size_t compiler_index = 0;  // argv[compiler_index] is the compiler
  std::size_t output_index = 0;    // argv[output_index] is what it writes
  std::string source;              // the one source a split compile step reads
  bool links = false;              // a link (its failures are link failures)
  // Run under the observer (observation.hpp), for a cache entry's manifest:
  // the argv is the same either way.
  bool observed = false;
  // Why a step that should be observed cannot be (its launcher's
  // unobservable): the build is then not stored.
  std::string unobservable;
  std::string comment;  // a load check: what `# ...` says
  // argv[depfile_index] is the dependency file (-MF's value), 0 when none:
  // the compiler writes it in the work directory, as the output.
  std::size_t depfile_index = 0;
};

struct StepInput {
  std::vector<std::string> sources;
  Launcher launcher;
  // What -march=native stands for here, when the launcher resolves it.
  std::vector<std::string> native_flags;
  bool observe = false;  // what the compiler reads is observed (for the cache)
  bool load_check = false;
  std::vector<std::string> required_symbols;
};

// Throws Error(compiler_missing) when the launcher resolves -march=native
// and `native_flags` is empty.
std::vector<Step> plan_steps(const BuildPlan& plan, const StepInput& in);

// One shell-safe line per command step, `# ...` for the others.
std::vector<std::string> step_lines(const std::vector<Step>& steps);

// Whether any step links objects alone (reads no headers).
bool links_objects_only(const std::vector<std::string>& sources);

}  // namespace kbuild

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
