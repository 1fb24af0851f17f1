// `--isa auto` as Inductor picks: the best ISA the CPU supports whose probe
// programs build with the configured compiler and the installed torch
// headers, and then load (Inductor's cpu_vec_isa.py, VecISA.check_build).
// Each probe's answer is cached under the cache root's discovery/ per
// compiler identity, torch root and probe command (or what the command is
// made from: IsaProbeSettings::command_key), so a later run compiles nothing.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/isa.hpp"

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

struct IsaProbeSettings {
  std::string compiler;    // as configured (--cxx, CXX), looked up on PATH
  std::string torch_root;  // whose headers the probes include
  std::string cache_dir;   // kbuild's cache root; "" caches nothing
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};  // per probe
  IsaProbeCommand command;
  IsaProbeKey command_key;  // unset: the command itself names it
  // Loads a built probe (kbuild-load-check: dlopen, RTLD_NOW), as Inductor's
  // check_build does; empty: a probe that builds counts as usable.
  std::vector<std::string> loader;
};

struct IsaProbeResult {
  Isa isa;
  std::vector<std::string> notes;  // an ISA the CPU has but the probe refused, a time-out
  int compiler_runs = 0;           // probes compiled (0 when every answer was cached)
};

// Picks as Inductor: the candidates of `cpu` best first, each usable when its
// probes build and load (x86; Arm's are taken as the CPU says, as Inductor does),
// then ATEN_CPU_CAPABILITY (choose_isa). A probe that fails to build or
// times out counts as failed; a time-out is not cached. A compiler that
// cannot be found leaves the pick to the CPU alone. Throws only
// Error(interrupted), when kbuild is interrupted while a probe runs.
IsaProbeResult probe_isa(const CpuFeatures& cpu, const Environment& env,
                         const IsaProbeSettings& settings);

}  // namespace kbuild
