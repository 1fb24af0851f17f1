#include "site/isa_probe.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "kbuild/error.hpp"
#include "util/file_system.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/process.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// kbuild's own probe programs, built from what Inductor's probes test: the
// vectorized float exp of ATen's vec headers (which need Sleef for the ISA
// the CPU_CAPABILITY macro names), and the AVX512-BF16, VNNI and AMX
// intrinsics the extras and the bigger ISAs use.
// (Plain literals: clang-format would indent a raw string's lines.)
constexpr const char* kVectorizedProbe =
    "// kbuild ISA probe: ATen's vectorized exp\n"
    "#include <ATen/cpu/vec/functional.h>\n"
    "#include <ATen/cpu/vec/vec.h>\n"
    "alignas(64) float kbuild_probe_result[16] = {};\n"
    "extern \"C\" void kbuild_vectorized_probe() {\n"
    "  at::vec::Vectorized<float> ones(1);\n"
    "  ones.exp().store(kbuild_probe_result);\n"
    "}\n";

constexpr const char* kBf16Probe =
    "// kbuild ISA probe: AVX512-BF16\n"
    "#include <immintrin.h>\n"
    "extern \"C\" __m512bh kbuild_bf16_probe(__m512 high, __m512 low) {\n"
    "  return _mm512_cvtne2ps_pbh(high, low);\n"
    "}\n";

constexpr const char* kVnniProbe =
    "// kbuild ISA probe: AVX512-VNNI, 256 and 512 bits\n"
    "#include <immintrin.h>\n"
    "extern \"C\" __m256i kbuild_vnni_probe_256(__m256i sum, __m256i a, __m256i b) {\n"
    "  return _mm256_dpbusd_epi32(sum, a, b);\n"
    "}\n"
    "extern \"C\" __m512i kbuild_vnni_probe_512(__m512i sum, __m512i a, __m512i b) {\n"
    "  return _mm512_dpbusd_epi32(sum, a, b);\n"
    "}\n";

// AMX with a bf16 (or, for amx_fp16, an fp16) tile product.
std::string amx_probe(const std::string& tile_product) {
  return "// kbuild ISA probe: AMX\n"
         "#include <cstdint>\n"
         "#include <immintrin.h>\n"
         "struct KbuildTileConfig {\n"
         "  std::uint8_t palette;\n"
         "  std::uint8_t start_row;\n"
         "  std::uint8_t reserved[14];\n"
         "  std::uint16_t bytes_per_row[16];\n"
         "  std::uint8_t rows[16];\n"
         "};\n"
         "extern \"C\" void kbuild_amx_probe() {\n"
         "  KbuildTileConfig config{};\n"
         "  _tile_loadconfig(&config);\n"
         "  _tile_zero(0);\n"
         "  " +
         tile_product +
         "(0, 1, 2);\n"
         "  _tile_dpbusd(0, 1, 2);\n"
         "}\n";
}

std::string probe_source(IsaProbe probe) {
  switch (probe) {
    case IsaProbe::vectorized: return kVectorizedProbe;
    case IsaProbe::bf16: return kBf16Probe;
    case IsaProbe::vnni: return kVnniProbe;
    case IsaProbe::amx: return amx_probe("_tile_dpbf16ps");
    case IsaProbe::amx_fp16: return amx_probe("_tile_dpfp16ps");
  }
  return "";
}

std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + " absent";
  return path + " " + std::to_string(st.st_size) + " " + std::to_string(ns(st.st_mtim));
}

// The answers for one compiler (the program that really runs, by size and
// time), torch (its version.py), CPU (-march=native means it) and set of
// command inputs: one file.
class ProbeCache {
 public:
  ProbeCache(const IsaProbeSettings& s, const std::string& compiler, const CpuFeatures& cpu) {
    key_ = file_stamp(compiler) + "\n" + file_stamp(s.torch_root + "/version.py") + "\n" +
           cpu_identity(cpu) + "\n" + s.command_inputs;
    if (s.cache_dir.empty()) return;
    Result<TrustedDir> dir = open_discovery_dir(s.cache_dir, true);
    if (!dir) return;
    dir_.emplace(std::move(*dir));
    name_ = fnv1a_name("isa-", key_, ".bin");
    load();
  }

  std::optional<bool> get(const std::string& probe) const {
    auto it = answers_.find(probe);
    if (it == answers_.end()) return std::nullopt;
    return it->second;
  }

  void put(const std::string& probe, bool builds) {
    answers_[probe] = builds;
    changed_ = true;
  }

  // Failing to write only costs a probe next time.
  void save() const {
    if (!dir_ || !changed_) return;
    ByteWriter w;
    w.str(kFormat);
    w.str(key_);
    w.u32(static_cast<std::uint32_t>(answers_.size()));
    for (const auto& [probe, builds] : answers_) w.str(probe), w.flag(builds);
    (void)dir_->write_atomically(name_, w.take());
  }

 private:
  // Raw bytes, not CBOR: nlohmann's CBOR reader took a tenth of a dry run
  // for these long keys.
  static constexpr const char* kFormat = "kbuild-isa-probes 1";

  void load() {
    Result<std::string> bytes = dir_->read(name_, 1u << 20);
    if (!bytes) return;
    // A torn or foreign file is no answer.
    ByteReader r(*bytes);
    if (r.str() != kFormat || r.str() != key_) return;
    std::map<std::string, bool> answers;
    for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) {
      std::string probe = r.str();
      answers[probe] = r.flag();
    }
    if (r.ok() && r.at_end()) answers_ = std::move(answers);
  }

  std::string key_;
  std::optional<TrustedDir> dir_;
  std::string name_;
  std::map<std::string, bool> answers_;
  bool changed_ = false;
};

// A private directory (mode 0700) for the probes' sources and libraries,
// removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(const Environment& env) {
    std::string pattern = env.get_nonempty("TMPDIR").value_or("/tmp") + "/kbuild-isa-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A new file (never an existing one, never through a link) holding `text`.
bool create_source(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  return fd.valid() && static_cast<bool>(write_all(fd.get(), text, path));
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) text += w + "\n";
  return text;
}

class Prober {
 public:
  // `compiler` runs; `identity` (the program it really is) keys the cache.
  Prober(const IsaProbeSettings& s, const Environment& env, std::string compiler,
         const std::string& identity, const CpuFeatures& cpu)
      : s_(s), env_(env), compiler_(std::move(compiler)), cpu_(cpu), cache_(s, identity, cpu) {}
  ~Prober() { cache_.save(); }
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // Inductor's VecISA.__bool__ chain for `kind`: the probes it must pass,
  // and the extras whose probes pass.
  std::optional<Isa> usable(IsaKind kind) {
    if (!is_x86_isa(kind)) return cpu_isa_with_extras(kind, cpu_);  // not probed (see header)
    std::optional<Isa> isa = probed(kind);
    if (!isa) failed_.push_back(std::string(isa_name(kind)));
    return isa;
  }

  std::vector<std::string> notes(const Isa& picked) const {
    std::vector<std::string> out = timeouts_;
    if (failed_.empty()) return out;
    std::string list;
    for (const std::string& name : failed_) list += (list.empty() ? "" : ", ") + name;
    out.push_back("--isa auto: the " + list + " probe" + (failed_.size() > 1 ? "s do" : " does") +
                  " not build" + (s_.loader.empty() ? "" : " or load") + " with " + s_.compiler +
                  " and the torch headers in " + s_.torch_root + "; as Inductor, using " +
                  std::string(isa_name(picked.kind)) + " (--isa " + failed_.front() +
                  " forces it)");
    return out;
  }

  int runs() const { return runs_; }
  int shared_used() const { return shared_used_; }
  const std::vector<IsaCheck>& checks() const { return checks_; }

 private:
  // The checks of Inductor's VecAVX512, VecAVX512VNNI and VecAMX __bool__
  // (cpu_vec_isa.py), in its order, as `line` has them; the CPU's flags stand
  // for torch.cpu's (_is_avx512_bf16_supported, _is_amx_fp16_supported).
  std::optional<Isa> probed(IsaKind kind) {
    Isa isa{kind};
    if (!check(isa, IsaProbe::vectorized)) return std::nullopt;
    const bool avx512_family = kind != IsaKind::avx2;
    if (avx512_family && s_.line.bf16_check && has("avx512_bf16")) {
      Isa with_bf16 = isa;
      with_bf16.avx512_bf16 = true;
      // VNNI checks it but its flags never carry it (its build_arch_flags);
      // AMX's later checks are built with it.
      if (check(with_bf16, IsaProbe::bf16) && kind != IsaKind::avx512_vnni) isa = with_bf16;
    }
    const bool vnni_check =
        kind == IsaKind::avx512_vnni || (kind == IsaKind::amx && s_.line.amx_extends_vnni);
    if (vnni_check && !check(isa, IsaProbe::vnni)) return std::nullopt;
    if (kind != IsaKind::amx) return isa;
    if (!check(isa, IsaProbe::amx)) return std::nullopt;
    if (s_.line.fp16_check && has("amx_fp16")) {
      Isa with_fp16 = isa;
      with_fp16.amx_fp16 = true;
      if (check(with_fp16, IsaProbe::amx_fp16)) isa = with_fp16;
    }
    return isa;
  }

  bool has(const char* flag) const { return cpu_.flags.count(flag) > 0; }

  // Whether `probe` builds (and loads) with `isa`'s flags: the cached
  // answer, else a shared one, else the compiler's; recorded as a check.
  bool check(const Isa& isa, IsaProbe probe) {
    const std::string source = probe_source(probe);
    // The command with stand-in paths (or what it is made from) names the
    // probe in the cache, and whether a probe that built was also loaded.
    const std::string key = (s_.command_key ? s_.command_key(isa)
                                            : joined(s_.command(isa, "@probe.cpp", "@probe.so"))) +
                            source + (s_.loader.empty() ? "" : "@loaded");
    std::optional<bool> answer = cache_.get(key);
    if (!answer) {
      auto shared = s_.shared_answers.find(isa_check_name(isa, probe));
      if (shared != s_.shared_answers.end()) {
        answer = shared->second;
        ++shared_used_;
      } else {
        answer = compile(isa, source);
      }
      if (answer) cache_.put(key, *answer);
    }
    checks_.push_back(IsaCheck{isa, probe, answer.value_or(false), answer.has_value()});
    return answer.value_or(false);
  }

  // nullopt: no answer worth keeping (timed out, or nothing could be run).
  std::optional<bool> compile(const Isa& isa, const std::string& source) {
    if (!scratch_) scratch_.emplace(env_);
    if (scratch_->path().empty()) return std::nullopt;
    const std::string stem = scratch_->path() + "/probe-" + std::to_string(++runs_);
    std::optional<bool> built = build(isa, source, stem);
    if (!built || !*built || s_.loader.empty()) return built;
    return load(isa, stem + ".so");
  }

  // Inductor loads each probe in a child with torch's lib/ first on
  // LD_LIBRARY_PATH (VecISA._probe_load): a probe that builds but whose
  // symbols do not resolve (Debian's torch with libsleef-dev) is unusable.
  std::optional<bool> load(const Isa& isa, const std::string& library) {
    std::vector<std::string> argv = s_.loader;
    argv.push_back(library);
    Environment child = env_;
    std::string path = s_.torch_root + "/lib";
    if (auto old = env_.get_nonempty("LD_LIBRARY_PATH")) path += ":" + *old;
    child.set("LD_LIBRARY_PATH", path);
    return run_probe_step(isa, argv, child, "load");
  }

  std::optional<bool> build(const Isa& isa, const std::string& source, const std::string& stem) {
    if (!create_source(stem + ".cpp", source)) return std::nullopt;
    std::vector<std::string> argv = s_.command(isa, stem + ".cpp", stem + ".so");
    argv[0] = compiler_;
    return run_probe_step(isa, argv, env_, "probe");
  }

  std::optional<bool> run_probe_step(const Isa& isa, const std::vector<std::string>& argv,
                                     const Environment& env, const std::string& what) {
    ProcessRequest opts;
    opts.capture_output = true;  // a failing probe's errors are expected
    opts.timeout = s_.timeout;
    opts.environment = &env;
    opts.handle_interrupts = true;
    ProcessResult run;
    try {
      run = real_processes().run(argv, opts);
    } catch (const Error&) {
      return std::nullopt;
    }
    if (run.timed_out) {
      timeouts_.push_back("--isa auto: the " + std::string(isa_name(isa.kind)) + " " + what + " " +
                          run.describe() + "; counted as failed, and asked again next time");
      return std::nullopt;
    }
    if (run.interrupted_by)
      throw Error(ErrorKind::interrupted,
                  "interrupted while probing the vector ISA; nothing was built");
    return run.success();
  }

  const IsaProbeSettings& s_;
  const Environment& env_;
  std::string compiler_;
  const CpuFeatures& cpu_;
  ProbeCache cache_;
  std::optional<ScratchDir> scratch_;
  std::vector<std::string> failed_;
  std::vector<std::string> timeouts_;
  std::vector<IsaCheck> checks_;
  int runs_ = 0;
  int shared_used_ = 0;
};

}  // namespace

namespace {

// The program `compiler` names, found on PATH: a link (g++ -> g++-12) is
// keyed on the program it names.
std::optional<std::pair<std::string, std::string>> found_compiler(const IsaProbeSettings& settings,
                                                                  const Environment& env) {
  std::optional<std::string> found = find_executable(settings.compiler, env);
  if (!found) return std::nullopt;
  std::error_code ec;
  std::string identity = fs::canonical(*found, ec).string();
  if (ec) identity = *found;
  return std::make_pair(*found, identity);
}

bool is_arm_isa(IsaKind kind) {
  return kind == IsaKind::neon || kind == IsaKind::sve256;
}

}  // namespace

std::string_view isa_probe_name(IsaProbe probe) {
  switch (probe) {
    case IsaProbe::vectorized: return "vectorized";
    case IsaProbe::bf16: return "avx512_bf16";
    case IsaProbe::vnni: return "avx512_vnni";
    case IsaProbe::amx: return "amx";
    case IsaProbe::amx_fp16: return "amx_fp16";
  }
  return "vectorized";
}

std::string isa_check_name(const Isa& isa, IsaProbe probe) {
  return std::string(isa_name(isa.kind)) + (isa.avx512_bf16 ? "+bf16" : "") +
         (isa.amx_fp16 ? "+fp16" : "") + " " + std::string(isa_probe_name(probe));
}

IsaProbeResult probe_isa(const CpuFeatures& cpu, const Environment& env,
                         const IsaProbeSettings& settings) {
  IsaProbeResult result;
  auto found = found_compiler(settings, env);
  if (!found) {
    result.isa = pick_isa(cpu, env);
    return result;
  }
  Prober prober(settings, env, found->first, found->second, cpu);
  result.isa = choose_isa(
      cpu_isa_candidates(cpu, settings.line), [&](IsaKind kind) { return prober.usable(kind); },
      env, &result.notes);
  std::vector<std::string> notes = prober.notes(result.isa);
  result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
  result.compiler_runs = prober.runs();
  return result;
}

IsaListResult probe_isa_list(const CpuFeatures& cpu, const Environment& env,
                             const IsaProbeSettings& settings) {
  auto found = found_compiler(settings, env);
  if (!found)
    throw Error(ErrorKind::compiler_missing,
                "compiler '" + settings.compiler +
                    "' not found on PATH: the ISA probes need it (give --cxx, or set CXX)");
  IsaListResult result;
  result.compiler = found->second;
  {
    Prober prober(settings, env, found->first, found->second, cpu);
    bool arm_taken = false;  // Inductor's Arm list holds SVE256 or NEON, not both
    for (IsaKind kind : cpu_isa_candidates(cpu, settings.line)) {
      if (is_arm_isa(kind) && arm_taken) continue;
      if (auto isa = prober.usable(kind)) {
        result.valid.push_back(*isa);
        arm_taken = arm_taken || is_arm_isa(kind);
      }
    }
    result.checks = prober.checks();
    result.compiler_runs = prober.runs();
    result.shared_answers_used = prober.shared_used();
    result.notes = prober.notes(result.valid.empty() ? Isa{} : result.valid.front());
  }  // the answers are saved here
  for (const IsaCheck& c : result.checks) result.certain = result.certain && c.certain;
  std::vector<IsaKind> kinds;
  for (const Isa& isa : result.valid) kinds.push_back(isa.kind);
  result.pick = choose_isa(
      kinds,
      [&](IsaKind kind) {
        for (const Isa& isa : result.valid)
          if (isa.kind == kind) return std::optional<Isa>(isa);
        return std::optional<Isa>();
      },
      env, &result.notes);
  const IsaKind best = result.valid.empty() ? IsaKind::none : result.valid.front().kind;
  result.capability_changed_pick = result.pick.kind != best;
  return result;
}

}  // namespace kbuild
