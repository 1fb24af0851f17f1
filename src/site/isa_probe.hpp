// `--isa auto` as Inductor picks: the best ISA the CPU supports whose probe
// programs build with the configured compiler and the installed torch
// headers, and then load (Inductor's cpu_vec_isa.py, VecISA.check_build).
// Each probe's answer is cached under the cache root's discovery/ per
// compiler identity, torch root and probe command (or what the command is
// made from: IsaProbeSettings::command_key), so a later run compiles nothing.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/environment.hpp"
#include "site/isa.hpp"

namespace kbuild {

// The probe's command for `isa`, as Inductor builds it (CppTorchOptions
// with that ISA and warnings off): compiles and links `source` into the
// shared library `output`. argv[0] is the compiler as configured.
using IsaProbeCommand = std::function<std::vector<std::string>(
    const Isa& isa, const std::string& source, const std::string& output)>;

// What names the probe command for `isa` in the cache when that is cheaper
// to make than the command: every input the command is made from, kbuild
// itself included (a dry run made the command of each ISA it tried).
using IsaProbeKey = std::function<std::string(const Isa& isa)>;

// The probe programs of Inductor's checks (cpu_vec_isa.py: VecISA._avx_code,
// VecAVX512._avx512_bf16_code, VecAVX512VNNI._avx512_vnni_code,
// VecAMX._amx_code and _amx_fp16_code), each in kbuild's own text.
enum class IsaProbe { vectorized, bf16, vnni, amx, amx_fp16 };

// "vectorized", "avx512_bf16", "avx512_vnni", "amx", "amx_fp16".
std::string_view isa_probe_name(IsaProbe probe);

// One check of Inductor's VecISA.__bool__: `probe` built with the flags of
// `isa` (extras included, as Inductor builds it at that point), then loaded.
struct IsaCheck {
  Isa isa;
  IsaProbe probe = IsaProbe::vectorized;
  bool passed = false;
  bool certain = true;  // false: it timed out or could not run (not cached, asked again)
};

// How a check is named among shared answers: "amx+bf16 avx512_vnni".
std::string isa_check_name(const Isa& isa, IsaProbe probe);

struct IsaProbeSettings {
  std::string compiler;    // as configured (--cxx, CXX), looked up on PATH
  std::string torch_root;  // whose headers the probes include
  std::string cache_dir;   // kbuild's cache root; "" caches nothing
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};  // per probe
  IsaProbeCommand command;
  IsaProbeKey command_key;  // unset: the command itself names it
  // What every command_key shares (isa_probe_inputs): it names the file the
  // answers are kept in, so another kbuild, profile or path keeps its own
  // and a dry run reads only the answers it can use.
  std::string command_inputs;
  // Loads a built probe (kbuild-load-check: dlopen, RTLD_NOW), as Inductor's
  // check_build does; empty: a probe that builds counts as usable.
  std::vector<std::string> loader;
  IsaLine line;  // the ISA classes and checks of the torch line (default: 2.11's)
  // Answers of checks (by isa_check_name) that a machine with the same
  // compiler, torch and CPU found (the remote cache): taken before a probe
  // is built, and cached here.
  std::map<std::string, bool> shared_answers;
};

struct IsaProbeResult {
  Isa isa;
  std::vector<std::string> notes;  // an ISA the CPU has but the probe refused, a time-out
  int compiler_runs = 0;           // probes compiled (0 when every answer was cached)
};

// Picks as Inductor: the candidates of `cpu` among the line's classes, best
// first, each usable when its checks pass (x86; Arm's are taken as the CPU
// says: Inductor builds its probe there too, kbuild does not yet), then
// ATEN_CPU_CAPABILITY (choose_isa). A probe that fails to build or
// times out counts as failed; a time-out is not cached. A compiler that
// cannot be found leaves the pick to the CPU alone. Throws only
// Error(interrupted), when kbuild is interrupted while a probe runs.
IsaProbeResult probe_isa(const CpuFeatures& cpu, const Environment& env,
                         const IsaProbeSettings& settings);

// Inductor's valid_vec_isa_list() and pick_vec_isa() for `cpu`: every
// candidate's checks run (none skipped because a better one is usable).
struct IsaListResult {
  std::vector<Isa> valid;                // Inductor's order (best first); Arm: one, unprobed
  Isa pick;                              // ATEN_CPU_CAPABILITY honoured (choose_isa)
  bool capability_changed_pick = false;  // the pick is not valid.front() (or none)
  std::vector<IsaCheck> checks;          // in the order Inductor runs them
  std::vector<std::string> notes;
  std::string compiler;  // the program the probes ran (links resolved)
  int compiler_runs = 0;
  int shared_answers_used = 0;  // checks answered by settings.shared_answers
  bool certain = true;          // every check answered (no time-out)
};

// Throws Error(compiler_missing) when the compiler cannot be found, and
// Error(interrupted) as probe_isa.
IsaListResult probe_isa_list(const CpuFeatures& cpu, const Environment& env,
                             const IsaProbeSettings& settings);

}  // namespace kbuild
