#include "site/isa.hpp"

#include <sys/utsname.h>

#include <cstdlib>
#include <functional>
#include <string_view>

#include "kbuild/environment.hpp"
#include "util/file_system.hpp"

namespace kbuild {

namespace {

constexpr std::string_view kAvx512Flags = "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma";
constexpr std::string_view kVnniFlags = " -mavx512vnni -mavx512vl";
constexpr std::string_view kAmxFlags = " -mamx-tile -mamx-bf16 -mamx-int8";

bool has(const CpuFeatures& cpu, const char* flag) {
  return cpu.flags.count(flag) > 0;
}

bool supports(const CpuFeatures& cpu, IsaKind kind) {
  bool x86 = cpu.machine == "x86_64" || cpu.machine == "AMD64";
  bool arm = cpu.machine == "aarch64" || cpu.machine == "arm64";
  bool avx512 = x86 && has(cpu, "avx512f") && has(cpu, "avx512dq") && has(cpu, "avx512vl") &&
                has(cpu, "avx512bw");
  switch (kind) {
    case IsaKind::none: return true;
    case IsaKind::avx2: return x86 && has(cpu, "avx2") && has(cpu, "fma");
    case IsaKind::avx512: return avx512;
    case IsaKind::avx512_vnni: return avx512 && has(cpu, "avx512_vnni");
    case IsaKind::amx:
      return avx512 && has(cpu, "avx512_vnni") && has(cpu, "amx_tile") && has(cpu, "amx_bf16") &&
             has(cpu, "amx_int8");
    case IsaKind::neon: return arm && (has(cpu, "asimd") || cpu.machine == "arm64");
    case IsaKind::sve256:
      return arm && has(cpu, "sve") && has(cpu, "bf16") && cpu.sve_vector_bytes == 32;
  }
  return false;
}

// What Inductor's pick adds on top of the ISA when the CPU has it.
Isa with_cpu_extras(IsaKind kind, const CpuFeatures& cpu) {
  Isa isa{kind};
  if (kind == IsaKind::avx512 || kind == IsaKind::amx) isa.avx512_bf16 = has(cpu, "avx512_bf16");
  if (kind == IsaKind::amx) isa.amx_fp16 = has(cpu, "amx_fp16");
  return isa;
}

// Inductor's preference order.
constexpr IsaKind kPreference[] = {IsaKind::amx,  IsaKind::avx512_vnni, IsaKind::avx512,
                                   IsaKind::avx2, IsaKind::sve256,      IsaKind::neon};

}  // namespace

namespace {

// The first "flags" (x86) or "Features" (arm) line: every core lists the
// same. Read without streams, and only the start of /proc/cpuinfo when the
// first core's block holds it (a dry run reads it).
std::string cpu_flags_line() {
  for (std::size_t limit : {std::size_t(16) << 10, std::size_t(4) << 20}) {
    Result<std::string> text = read_file_up_to("/proc/cpuinfo", limit);
    if (!text) return "";
    for (std::size_t start = 0, end; start < text->size(); start = end + 1) {
      end = text->find('\n', start);
      if (end == std::string::npos) break;  // cut short: maybe by the limit
      std::string_view line(text->data() + start, end - start);
      std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view key = line.substr(0, colon);
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
      if (key == "flags" || key == "Features") return std::string(line.substr(colon + 1));
    }
    if (text->size() < limit) return "";
  }
  return "";
}

CpuFeatures read_cpu_features_uncached() {
  CpuFeatures cpu;
  cpu.machine = machine_name();
  const std::string flags = cpu_flags_line();
  for (std::size_t start = 0; start < flags.size();) {
    std::size_t end = flags.find_first_of(" \t", start);
    if (end == std::string::npos) end = flags.size();
    if (end > start) cpu.flags.insert(flags.substr(start, end - start));
    start = end + 1;
  }
  // Arm's alone (elsewhere the failed lookup was a visible part of a dry run).
  if (cpu.machine == "aarch64" || cpu.machine == "arm64")
    if (auto sve = read_file_up_to("/proc/sys/abi/sve_default_vector_length", 32))
      cpu.sve_vector_bytes = std::atoi(sve->c_str());
  return cpu;
}

}  // namespace

std::string machine_name() {
  struct utsname names {};
  return uname(&names) == 0 ? names.machine : "";
}

const CpuFeatures& read_cpu_features() {
  // The CPU does not change while kbuild runs; the ISA pick and the cache
  // key both ask.
  static const CpuFeatures cpu = read_cpu_features_uncached();
  return cpu;
}

std::vector<IsaKind> cpu_isa_candidates(const CpuFeatures& cpu, const IsaLine& line) {
  std::vector<IsaKind> kinds;
  for (IsaKind kind : kPreference)
    if (line.kinds.count(kind) && supports(cpu, kind)) kinds.push_back(kind);
  return kinds;
}

std::string cpu_identity(const CpuFeatures& cpu) {
  std::string identity = cpu.machine;
  for (const std::string& flag : cpu.flags) identity += " " + flag;
  if (cpu.sve_vector_bytes) identity += " sve_vector_bytes=" + std::to_string(cpu.sve_vector_bytes);
  return identity;
}

std::vector<std::string> isa_cpu_flags(const CpuFeatures& cpu) {
  std::vector<std::string> flags;
  for (const char* flag :
       {"avx2", "fma", "avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_vnni", "avx512_bf16",
        "amx_tile", "amx_bf16", "amx_int8", "amx_fp16", "asimd", "sve", "bf16"})
    if (has(cpu, flag)) flags.push_back(flag);
  return flags;
}

bool is_x86_isa(IsaKind kind) {
  return kind == IsaKind::avx2 || kind == IsaKind::avx512 || kind == IsaKind::avx512_vnni ||
         kind == IsaKind::amx;
}

Isa cpu_isa_with_extras(IsaKind kind, const CpuFeatures& cpu) {
  return with_cpu_extras(kind, cpu);
}

Isa choose_isa(const std::vector<IsaKind>& candidates,
               const std::function<std::optional<Isa>(IsaKind)>& usable, const Environment& env,
               std::vector<std::string>* notes) {
  auto capability = env.get_nonempty("ATEN_CPU_CAPABILITY");
  if (capability == "default") return Isa{};
  // The family a capability names (Inductor matches the ISA's name: "avx512"
  // is in amx's and avx512_vnni's too, so avx512 may pick amx).
  auto in_family = [&](IsaKind kind) {
    if (capability == "avx2") return kind == IsaKind::avx2;
    if (capability == "avx512")
      return kind == IsaKind::amx || kind == IsaKind::avx512_vnni || kind == IsaKind::avx512;
    return false;
  };
  for (IsaKind kind : candidates)
    if (in_family(kind))
      if (auto isa = usable(kind)) return *isa;
  // Not a family, or none of it usable: Inductor ignores the value and
  // takes its best (an unknown value is warned about by
  // aten_capability_warning).
  bool named_family = capability == "avx2" || capability == "avx512";
  for (IsaKind kind : candidates)
    if (auto isa = usable(kind)) {
      if (named_family && notes)
        notes->push_back("ATEN_CPU_CAPABILITY=" + *capability +
                         " names no ISA this CPU and compiler can use: ignored, as Inductor "
                         "does (using " +
                         std::string(isa_name(isa->kind)) + ")");
      return *isa;
    }
  return Isa{};
}

Isa pick_isa(const CpuFeatures& cpu, const Environment& env) {
  return choose_isa(
      cpu_isa_candidates(cpu),
      [&](IsaKind kind) { return std::optional<Isa>(with_cpu_extras(kind, cpu)); }, env);
}

std::optional<std::string> aten_capability_warning(const Environment& env) {
  auto capability = env.get_nonempty("ATEN_CPU_CAPABILITY");
  if (!capability) return std::nullopt;
  for (const char* known : {"default", "avx2", "avx512", "vsx", "zvector", "sve256"})
    if (*capability == known) return std::nullopt;
  return "ignoring ATEN_CPU_CAPABILITY=" + *capability +
         " (known: default, avx2, avx512, vsx, zvector, sve256)";
}

std::optional<Isa> parse_isa(std::string_view spec, const CpuFeatures& cpu,
                             const Environment& env) {
  if (spec == "auto") return pick_isa(cpu, env);
  auto plus = spec.find('+');
  std::string_view name = spec.substr(0, plus);
  std::optional<IsaKind> kind;
  for (IsaKind k : {IsaKind::none, IsaKind::avx2, IsaKind::avx512, IsaKind::avx512_vnni,
                    IsaKind::amx, IsaKind::neon, IsaKind::sve256})
    if (isa_name(k) == name) kind = k;
  if (!kind) return std::nullopt;
  Isa isa{*kind};
  if (plus == std::string_view::npos) return isa;
  std::string_view rest = spec.substr(plus + 1);
  if (rest.empty()) return std::nullopt;
  while (!rest.empty()) {
    auto next = rest.find('+');
    std::string_view extra = rest.substr(0, next);
    if (next != std::string_view::npos && next + 1 == rest.size()) return std::nullopt;
    bool avx512_family =
        isa.kind == IsaKind::avx512 || isa.kind == IsaKind::avx512_vnni || isa.kind == IsaKind::amx;
    if (extra == "bf16" && avx512_family)
      isa.avx512_bf16 = true;
    else if (extra == "fp16" && isa.kind == IsaKind::amx)
      isa.amx_fp16 = true;
    else
      return std::nullopt;
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
  }
  return isa;
}

std::string_view isa_name(IsaKind kind) {
  switch (kind) {
    case IsaKind::none: return "none";
    case IsaKind::avx2: return "avx2";
    case IsaKind::avx512: return "avx512";
    case IsaKind::avx512_vnni: return "avx512_vnni";
    case IsaKind::amx: return "amx";
    case IsaKind::neon: return "neon";
    case IsaKind::sve256: return "sve256";
  }
  return "none";
}

std::vector<std::string> isa_macros(const Isa& isa) {
  switch (isa.kind) {
    case IsaKind::none: return {};
    case IsaKind::avx2: return {"CPU_CAPABILITY_AVX2"};
    case IsaKind::avx512:
    case IsaKind::avx512_vnni:
    case IsaKind::amx: return {"CPU_CAPABILITY_AVX512"};
    case IsaKind::neon: return {"CPU_CAPABILITY_NEON", "AT_BUILD_ARM_VEC256_WITH_SLEEF"};
    case IsaKind::sve256:
      return {"CPU_CAPABILITY_SVE", "CPU_CAPABILITY_SVE256", "AT_BUILD_ARM_VEC256_WITH_SLEEF",
              "__ARM_FEATURE_BF16"};
  }
  return {};
}

std::optional<std::string> isa_flags(const Isa& isa) {
  std::string flags;
  switch (isa.kind) {
    case IsaKind::none: return std::nullopt;
    case IsaKind::avx2: return std::string("-mavx2 -mfma -mf16c");
    case IsaKind::avx512:
      flags = kAvx512Flags;
      if (isa.avx512_bf16) flags += " -mavx512bf16";
      return flags;
    case IsaKind::avx512_vnni:
      // Inductor's VNNI pick never has bf16; its bf16 probe of VNNI does.
      flags = std::string(kAvx512Flags) + std::string(kVnniFlags);
      if (isa.avx512_bf16) flags += " -mavx512bf16";
      return flags;
    case IsaKind::amx:
      flags = std::string(kAvx512Flags) + std::string(kVnniFlags) + std::string(kAmxFlags);
      if (isa.avx512_bf16) flags += " -mavx512bf16";
      if (isa.amx_fp16) flags += " -mamx-fp16";
      return flags;
    case IsaKind::neon: return std::string();
    case IsaKind::sve256: return std::string("-march=armv8-a+sve+bf16 -msve-vector-bits=256");
  }
  return std::nullopt;
}

}  // namespace kbuild
