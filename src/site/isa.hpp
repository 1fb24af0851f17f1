// The vector ISA Inductor compiles CPU kernels for: its macros and flags,
// and the pick from the running CPU (like Inductor's pick_vec_isa).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/request.hpp"

namespace kbuild {

class Environment;

// What the running CPU supports: `machine` as uname -m, `flags` from
// /proc/cpuinfo ("flags" on x86, "Features" on Arm). Read once per process.
struct CpuFeatures {
  std::string machine;
  std::set<std::string> flags;
  int sve_vector_bytes = 0;
};
const CpuFeatures& read_cpu_features();

// uname -m (cheap: no /proc/cpuinfo).
std::string machine_name();

// The best ISA for `cpu` by its flags alone, honouring ATEN_CPU_CAPABILITY
// as Inductor does (`--isa auto` also probes the compiler: isa_probe.hpp).
Isa pick_isa(const CpuFeatures& cpu, const Environment& env);

// The vector ISA classes of one Inductor line (its cpu_vec_isa.py) and the
// checks their VecISA.__bool__ runs. The default is 2.11's; lines before 2.9
// check neither extra, and before 2.11 VecAMX derives from VecAVX512 (no VNNI
// class, no VNNI check).
struct IsaLine {
  std::set<IsaKind> kinds = {IsaKind::avx2, IsaKind::avx512, IsaKind::avx512_vnni,
                             IsaKind::amx,  IsaKind::neon,   IsaKind::sve256};
  bool bf16_check = true;        // the avx512 family checks AVX512-BF16 (-mavx512bf16)
  bool fp16_check = true;        // VecAMX checks AMX-FP16 (-mamx-fp16)
  bool amx_extends_vnni = true;  // VecAMX derives from VecAVX512VNNI: it runs VNNI's check
};

// The ISAs Inductor would consider on `cpu`, best first (x86: amx,
// avx512_vnni, avx512, avx2; Arm: sve256, neon), by the CPU's flags, among
// the classes of `line`.
std::vector<IsaKind> cpu_isa_candidates(const CpuFeatures& cpu, const IsaLine& line = {});

// What the probes' answers depend on besides the compiler and torch: the
// machine and every CPU flag (-march=native means them), in one line.
std::string cpu_identity(const CpuFeatures& cpu);
// The CPU flags the ISA choice reads (x86: avx2 ... amx_fp16; Arm: asimd,
// sve, bf16), those the CPU has.
std::vector<std::string> isa_cpu_flags(const CpuFeatures& cpu);

// Whether `kind` is an x86 ISA (whose probes Inductor and kbuild build).
bool is_x86_isa(IsaKind kind);
// `kind` with the extras the CPU has (avx512/amx: +bf16, amx: +fp16).
Isa cpu_isa_with_extras(IsaKind kind, const CpuFeatures& cpu);

// Inductor's choice among `candidates` (best first); `usable` says whether
// one can be used and with which extras. ATEN_CPU_CAPABILITY=default: none;
// avx2 or avx512: the best usable one of that family; any other value, or a
// family with nothing usable: the best usable one (a note in `notes` says
// the value was ignored). None usable: none.
Isa choose_isa(const std::vector<IsaKind>& candidates,
               const std::function<std::optional<Isa>(IsaKind)>& usable, const Environment& env,
               std::vector<std::string>* notes = nullptr);

// A warning when ATEN_CPU_CAPABILITY is set to a value torch does not know
// (it is then ignored, by torch and by kbuild).
std::optional<std::string> aten_capability_warning(const Environment& env);

// Parses --isa: auto | none | avx2 | avx512 | avx512_vnni | amx | neon | sve256,
// with optional extras `+bf16` (-mavx512bf16, avx512 family) and `+fp16`
// (-mamx-fp16, amx), e.g. "amx+bf16". A named ISA means exactly those flags;
// only `auto` asks the running CPU (extras included). nullopt for bad input.
std::optional<Isa> parse_isa(std::string_view spec, const CpuFeatures& cpu, const Environment& env);

std::string_view isa_name(IsaKind kind);
// The definitions Inductor adds for the ISA (empty for none).
std::vector<std::string> isa_macros(const Isa& isa);
// The ISA flags, as the one passthrough entry Inductor adds; nullopt for none.
std::optional<std::string> isa_flags(const Isa& isa);

}  // namespace kbuild
