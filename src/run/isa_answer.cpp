#include "run/isa_answer.hpp"

#include <filesystem>
#include <map>
#include <optional>

#include "devices/profile.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"
#include "run/cache_key.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "run/storage.hpp"
#include "site/isa.hpp"
#include "site/isa_probe.hpp"
#include "site/site.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/process.hpp"
#include "util/redis_client.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace kbuild {

namespace {

// What the remote cache holds for one key: the answer of each check.
constexpr const char* kSharedFormat = "kbuild-isa-answers 1";

// Inductor's str() of the class (pick_vec_isa's answer prints so).
std::string inductor_name(IsaKind kind, const IsaLine& line) {
  switch (kind) {
    case IsaKind::none: return "INVALID_VEC_ISA";
    case IsaKind::avx2: return "avx2";
    case IsaKind::avx512: return "avx512";
    case IsaKind::avx512_vnni: return "avx512 avx512_vnni";
    case IsaKind::amx:
      return line.amx_extends_vnni ? "avx512 avx512_vnni amx_tile" : "avx512 amx_tile";
    case IsaKind::neon:
    case IsaKind::sve256: return "asimd";
  }
  return "INVALID_VEC_ISA";
}

const char* inductor_class(IsaKind kind) {
  switch (kind) {
    case IsaKind::none: return "InvalidVecISA";
    case IsaKind::avx2: return "VecAVX2";
    case IsaKind::avx512: return "VecAVX512";
    case IsaKind::avx512_vnni: return "VecAVX512VNNI";
    case IsaKind::amx: return "VecAMX";
    case IsaKind::neon: return "VecNEON";
    case IsaKind::sve256: return "VecSVE256";
  }
  return "InvalidVecISA";
}

// The ISA's macros and flags as this line's VecISA builds with them
// (build_macro(), build_arch_flags()).
void add_build_args(json& out, const Profile& profile, const Isa& isa) {
  out["macros"] = profile_isa_macros(profile, isa);
  out["flags"] = profile_isa_flags(profile, isa).value_or("");
}

bool check_passed(const std::vector<IsaCheck>& checks, IsaKind kind, IsaProbe probe) {
  for (const IsaCheck& c : checks)
    if (c.isa.kind == kind && c.probe == probe) return c.passed;
  return false;
}

json isa_json(const Isa& isa, const Profile& profile, const IsaLine& line,
              const std::vector<IsaCheck>& checks) {
  json out;
  out["isa"] = std::string(isa_name(isa.kind));
  out["inductor"] = inductor_name(isa.kind, line);
  out["class"] = inductor_class(isa.kind);
  add_build_args(out, profile, isa);
  // Inductor's is_avx512_bf16_supported(): VNNI's flags never carry it.
  out["avx512_bf16"] = check_passed(checks, isa.kind, IsaProbe::bf16);
  out["amx_fp16"] = isa.amx_fp16;
  out["probed"] = is_x86_isa(isa.kind);
  return out;
}

json check_json(const IsaCheck& check, const Profile& profile) {
  json out;
  out["isa"] = std::string(isa_name(check.isa.kind));
  out["class"] = inductor_class(check.isa.kind);
  out["probe"] = std::string(isa_probe_name(check.probe));
  add_build_args(out, profile, check.isa);
  out["passed"] = check.passed;
  out["certain"] = check.certain;
  return out;
}

// The compiler's --version line, remembered under its identity (running it
// is most of a warm answer's time).
std::string compiler_version_line(const std::string& compiler, const std::string& program,
                                  const Environment& env, const FileSystem& files) {
  std::optional<ParsedFileCache> cache = ParsedFileCache::open(cache_root(env), files);
  if (cache)
    if (auto line = cache->read("compiler-version", program)) return *line;
  CompilerVersion version = compiler_version(compiler, env);
  if (cache && !version.first_line.empty())
    if (auto files = stat_files(cache->files(), {program}))
      cache->write("compiler-version", program, *files, version.first_line);
  return version.first_line;
}

// The key two machines share the answers under (cache_key.hpp:
// isa_answer_key); nullopt when the compiler or torch's version.py cannot
// be read.
std::optional<std::string> shared_key(const std::string& program, const BuildRequest& request,
                                      const Paths& paths, const Profile& profile,
                                      const IsaProbeSettings& settings, const CpuFeatures& cpu,
                                      const Environment& env, const TrustedDir* cache,
                                      const FileSystem& files) {
  Result<std::string> compiler = program_hash(files, program, cache);
  Result<std::string> version_py = read_file_up_to(settings.torch_root + "/version.py", 1u << 20);
  if (!compiler || !version_py) return std::nullopt;
  IsaAnswerKeyInput input;
  input.format = kSharedFormat;
  input.compiler_hash = *compiler;
  input.compiler_name = request.compiler;
  input.machine = request.machine;
  input.profile_digest = digest_hex(encode_profile(profile));
  input.torch_root = settings.torch_root;
  input.version_py_digest = digest_hex(*version_py);
  input.python_include = paths.python_include.value_or("-");
  input.python_libdir = paths.python_libdir.value_or("-");
  input.loaded = !settings.loader.empty();
  input.ld_library_path = env.get("LD_LIBRARY_PATH").value_or("");
  input.cpu = cpu_identity(cpu);
  return isa_answer_key(input);
}

std::map<std::string, bool> decode_answers(const RemoteBlob& blob) {
  if (blob.manifest != kSharedFormat) return {};
  ByteReader r(blob.bytes);
  std::map<std::string, bool> answers;
  for (std::uint32_t i = r.count(); i > 0 && r.ok(); --i) {
    std::string name = r.str();
    answers[name] = r.flag();
  }
  return r.ok() && r.at_end() ? answers : std::map<std::string, bool>{};
}

std::string encode_answers(const std::vector<IsaCheck>& checks) {
  std::map<std::string, bool> answers;
  for (const IsaCheck& c : checks)
    if (c.certain) answers[isa_check_name(c.isa, c.probe)] = c.passed;
  ByteWriter w;
  w.u32(static_cast<std::uint32_t>(answers.size()));
  for (const auto& [name, passed] : answers) w.str(name), w.flag(passed);
  return w.take();
}

// Fetches the shared answers before the probes, stores them after, through
// the storage stack a build's settings make (resolve_run_settings: the
// remote cache behind the local one, in its signed and read-only layers).
class SharedAnswers {
 public:
  SharedAnswers(const IsaAnswerRequest& request, const Environment& env, const FileSystem& files)
      : settings_(resolve_run_settings(run_of(request), nullptr, env)),
        cache_(OutputCache::open(settings_.cache, true, files).cache),  // disabled: none shared
        remote_(settings_.remote, nullptr, files),
        stack_(&cache_, &remote_) {}

  bool enabled() const { return remote_.enabled() && !stack_.empty(); }
  const FileSystem& files() const { return cache_.files(); }

  std::map<std::string, bool> fetch(const std::optional<std::string>& key) {
    if (!enabled() || !key) return {};
    key_ = key;
    RemoteResult<RemoteBlob> blob = stack_.top().get_blob(*key);
    fetched_ = blob ? decode_answers(*blob) : std::map<std::string, bool>{};
    return fetched_;
  }

  // Stores the answers when they add to what was fetched; returns whether.
  bool store(const IsaListResult& result) {
    if (!enabled() || !key_ || !result.certain) return false;
    std::size_t known = 0;
    for (const IsaCheck& c : result.checks) known += fetched_.count(isa_check_name(c.isa, c.probe));
    if (known == result.checks.size()) return false;
    // Not stored: read-only, too large, or the server failed (warning()).
    return static_cast<bool>(
        stack_.top().put_blob(*key_, RemoteBlob{kSharedFormat, encode_answers(result.checks)}));
  }

  std::string url() const { return remote_.settings().url; }
  const std::string& warning() const { return remote_.warning(); }

 private:
  // kbuild isa's run: the cache on, its remote cache as asked.
  static BuildRequest run_of(const IsaAnswerRequest& request) {
    BuildRequest run;
    run.remote_cache = request.remote_cache;
    run.remote_cache_readonly = request.remote_cache_readonly;
    return run;
  }

  RunSettings settings_;
  OutputCache cache_;
  RemoteCache remote_;
  StorageStack stack_;
  std::optional<std::string> key_;
  std::map<std::string, bool> fetched_;
};

// The strings of `array` (or each element's `key`), joined by `separator`.
std::string joined(const json& array, const char* separator, const char* key = nullptr) {
  std::string out;
  for (const json& item : array) {
    if (!out.empty()) out += separator;
    out += key ? item[key].get<std::string>() : item.get<std::string>();
  }
  return out;
}

json torch_json(const ProfileChoice& choice, const std::string& torch_root) {
  json out;
  out["root"] = torch_root;
  out["version_py"] = torch_root + "/version.py";
  out["version"] = choice.torch_version;
  std::optional<std::string> line = inductor_line_of(choice.torch_version);
  out["line"] = line ? json(*line) : json(nullptr);
  out["profile"] = choice.profile->name;
  // Only a profile of the torch's own line was measured against it.
  out["profile_matches_line"] = !choice.note && line && *line == choice.profile->name;
  return out;
}

json cpu_json(const CpuFeatures& cpu) {
  json out;
  out["machine"] = cpu.machine;
  out["isa_flags"] = isa_cpu_flags(cpu);
  out["identity"] = digest_hex(cpu_identity(cpu));
  return out;
}

json capability_json(const IsaListResult& result, const Environment& env) {
  json out;
  std::optional<std::string> value = env.get_nonempty("ATEN_CPU_CAPABILITY");
  out["value"] = value ? json(*value) : json(nullptr);
  out["changed_pick"] = result.capability_changed_pick;
  out["known"] = !aten_capability_warning(env);
  return out;
}

// Why there is no torch, and what to do.
std::string no_torch_message(const Site& site, const IsaAnswerRequest& request) {
  std::string why = request.site.no_torch ? "--no-torch" : "torch not found";
  if (!request.site.no_torch && site.discovery)
    why += " (" +
           (site.discovery->info ? site.discovery->info->python + " has no 'torch' package"
                                 : site.discovery->problem) +
           ")";
  return "kbuild isa needs torch's headers (the ISA probes include them): " + why +
         "; give --torch-root DIR (the torch package dir), or --python PYTHON with torch";
}

}  // namespace

IsaAnswer isa_answer(const IsaAnswerRequest& request, const Environment& env,
                     const FileSystem& files) {
  Site site = resolve_site(request.site, env);
  if (!site.paths.torch_root) throw Error(ErrorKind::usage, no_torch_message(site, request));
  IsaAnswer answer;
  answer.notes = site.notes;
  if (auto warning = aten_capability_warning(env)) answer.warnings.push_back(*warning);
  const std::string root = cache_root(env);
  ProfileChoice profile =
      choose_profile_for(profiles_dir(env), request.site.torch_version, site.paths, root);
  if (profile.note) answer.notes.push_back(*profile.note);

  BuildRequest build;
  build.compiler = request.compiler;
  build.machine = machine_name();
  build.profile = profile.profile;
  const ResolveContext context{site.paths, env, profile.profile.get()};
  IsaProbeSettings settings = isa_probe_settings(build, context, answer.notes);
  const CpuFeatures& cpu = read_cpu_features();

  SharedAnswers shared(request, env, files);
  std::optional<std::string> program = find_executable(request.compiler, env);
  if (shared.enabled() && program) {
    std::error_code ec;
    std::string canonical = fs::canonical(*program, ec).string();
    Result<TrustedDir> cache =
        root.empty() ? Result<TrustedDir>(Failure{"no cache"}) : open_cache_root(root, true);
    settings.shared_answers =
        shared.fetch(shared_key(ec ? *program : canonical, build, site.paths, *profile.profile,
                                settings, cpu, env, cache ? &*cache : nullptr, shared.files()));
  }
  IsaListResult result = probe_isa_list(cpu, env, settings);
  const bool stored = shared.store(result);
  if (!shared.warning().empty()) answer.warnings.push_back(shared.warning());
  answer.notes.insert(answer.notes.end(), result.notes.begin(), result.notes.end());

  const Profile& used = *profile.profile;
  json& out = answer.json;
  out["format"] = 1;
  out["valid"] = json::array();
  for (const Isa& isa : result.valid)
    out["valid"].push_back(isa_json(isa, used, settings.line, result.checks));
  out["pick"] = result.pick.kind == IsaKind::none
                    ? json(nullptr)
                    : isa_json(result.pick, used, settings.line, result.checks);
  out["aten_cpu_capability"] = capability_json(result, env);
  out["certain"] = result.certain;
  out["checks"] = json::array();
  for (const IsaCheck& check : result.checks) out["checks"].push_back(check_json(check, used));
  out["compiler"] = {
      {"configured", request.compiler},
      {"path", result.compiler},
      {"version", compiler_version_line(request.compiler, result.compiler, env, files)}};
  out["torch"] = torch_json(profile, settings.torch_root);
  out["python"] = {{"include", site.paths.python_include.value_or("")},
                   {"libdir", site.paths.python_libdir.value_or("")}};
  out["cpu"] = cpu_json(cpu);
  out["probes_compiled"] = result.compiler_runs;
  out["remote"] = {{"url", shared.enabled() ? json(redact_address(shared.url())) : json(nullptr)},
                   {"answers_used", result.shared_answers_used},
                   {"stored", stored}};
  out["notes"] = answer.notes;
  return answer;
}

std::vector<std::string> isa_answer_lines(const json& answer) {
  auto isa_line = [](const json& isa) {
    return isa["isa"].get<std::string>() + " (Inductor's " + isa["inductor"].get<std::string>() +
           "; flags: " + isa["flags"].get<std::string>() + ")";
  };
  std::vector<std::string> lines;
  lines.push_back("pick        " +
                  (answer["pick"].is_null() ? std::string("none") : isa_line(answer["pick"])));
  const std::string valid = joined(answer["valid"], ", ", "isa");
  lines.push_back("valid       " + (valid.empty() ? std::string("none") : valid) +
                  " (Inductor's valid_vec_isa_list, best first)");
  const json& capability = answer["aten_cpu_capability"];
  lines.push_back(
      "ATEN_CPU_CAPABILITY  " +
      (capability["value"].is_null()
           ? std::string("unset")
           : capability["value"].get<std::string>() +
                 (capability["changed_pick"].get<bool>() ? " (changed the pick)" : "")));
  lines.push_back("compiler    " + answer["compiler"]["path"].get<std::string>() + " (" +
                  answer["compiler"]["version"].get<std::string>() + ")");
  const json& torch = answer["torch"];
  lines.push_back("torch       " + torch["root"].get<std::string>() + " (" +
                  torch["version"].get<std::string>() + ", profile " +
                  torch["profile"].get<std::string>() +
                  (torch["profile_matches_line"].get<bool>() ? "" : ", not its line's") + ")");
  lines.push_back("cpu         " + answer["cpu"]["machine"].get<std::string>() + ": " +
                  joined(answer["cpu"]["isa_flags"], " "));
  const int compiled = answer["probes_compiled"].get<int>();
  lines.push_back(
      "probes      " + std::to_string(answer["checks"].size()) + " checks, " +
      (compiled ? std::to_string(compiled) + " compiled now"
                : std::string("none compiled (cached answers)")) +
      (answer["certain"].get<bool>() ? "" : "; some timed out (asked again next time)"));
  return lines;
}

}  // namespace kbuild
