
#include "diagnose/build_context.hpp"

#include <chrono>
#include <filesystem>

#include "devices/device_file.hpp"
#include "devices/plugin.hpp"
#include "diagnose/report.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"
#include "site/site.hpp"
#include "util/environment.hpp"
#include "util/file_system.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// The session's registry gives the device file's defaults, unless the
// caller named another.
RunSettingsRequest in_session(const Session& session, RunSettingsRequest request) {
  if (!request.registry) request.registry = &session.registry;
  return request;
}

}  // namespace

Session::Session(const SessionOptions& options, const Environment& e) : env(e) {
  auto start = std::chrono::steady_clock::now();
  site = resolve_site(options.site, env);
  // --no-torch still follows a --torch-root it was given (its base layer).
  Paths profile_paths = site.paths;
  if (options.site.no_torch && !options.site.torch_root.empty())
    profile_paths.torch_root = options.site.torch_root;
  profile = choose_profile_for(profiles_dir(env), options.site.torch_version, profile_paths,
                               cache_root(env), !options.allow_untrusted_device_files);
  if (profile.note) site.notes.push_back(*profile.note);
  device_files =
      register_device_files(device_file_sources(data_dir(env), env, options.device_files), registry,
                            options.allow_untrusted_device_files, cache_root(env));
  timings.push_back({"config", seconds_since(start)});
}

std::vector<std::string> Session::warnings() const {
  std::vector<std::string> all = device_files.warnings;
  for (const std::string& w : registry.warnings()) all.push_back(w);
  return all;
}

std::optional<DeviceListing> Session::listing(const std::string& device) const {
  for (DeviceListing& d : registry.list())
    if (d.name == device) return std::move(d);
  return std::nullopt;
}

std::string Session::backend_of(const DeviceQuery& query) const {
  if (!query.backend.empty()) return query.backend;
  if (auto d = listing(query.device_type))
    for (const BackendInfo& b : d->backends)
      if (b.is_default) return b.name;
  return "";
}

std::string device_description(const DeviceListing& device) {
  static const std::pair<const char*, const char*> kBuiltIn[] = {
      {"cpu", "the host CPU (Inductor's default device)"},
      {"cuda", "NVIDIA GPUs through CUDA (AMD GPUs on a ROCm torch)"},
      {"xpu", "Intel GPUs through SYCL"},
      {"mps", "Apple GPUs through Metal"},
  };
  if (device.kind == "built-in") {
    for (const auto& [name, what] : kBuiltIn)
      if (device.name == name) return what;
    return "";
  }
  try {
    return load_device_file(device.source).description;
  } catch (const Error&) {
    return "";  // it loaded a moment ago; a file changed since says nothing here
  }
}

std::optional<std::string> Session::device_suggestion(const std::string& device) const {
  if (listing(device)) return std::nullopt;
  std::vector<std::string> known;
  for (const DeviceListing& d : registry.list()) known.push_back(d.name);
  return closest_match(device, known);
}

std::optional<Error> report_path_problem(const std::string& report,
                                         const std::vector<std::string>& sources,
                                         const std::string& output) {
  auto same_file = [&](const std::string& other) {
    std::error_code ec;
    if (fs::equivalent(report, other, ec)) return true;
    return fs::absolute(report, ec).lexically_normal() ==
           fs::absolute(other, ec).lexically_normal();
  };
  for (const std::string& source : sources)
    if (same_file(source))
      return Error(ErrorKind::usage,
                   "--report " + report + " is also a source; choose another file");
  if (!output.empty() && same_file(output))
    return Error(ErrorKind::usage,
                 "--report " + report + " is also the output; choose another file");
  if (Status replaceable = check_replaceable(report); !replaceable)
    return Error(ErrorKind::output, "--report " + replaceable.why());
  return std::nullopt;
}

BuildContext::BuildContext(const Session& session, const RunSettingsRequest& request)
    : run(resolve_run_settings(in_session(session, request), session.env)),
      cache(OutputCache::open(run.cache, !request.run.dry_run)),
      env_(session.env),
      options_(request.run) {
  if (!cache.problem().empty())
    (cache.problem_is_warning() ? warnings : notes).push_back(cache.problem());
  settings.cache = &cache;
  // Made also for a dry run (it connects only when asked): the PCH is
  // planned as the build with this remote cache plans it.
  if (!run.remote.url.empty()) settings.remote = &remote.emplace(run.remote);
  settings.launcher = run.launcher;
  settings.timeout = run.timeout;
  if (options_.load_check && !options_.dry_run) settings.load_check.loader = {load_check_helper()};
  settings.load_check.required_symbols = options_.required_symbols;
  settings.load_check.strict = options_.load_check_strict;
}

BuildContext::PchPlace BuildContext::pch_place() {
  PchPlace place;
  place.root = cache.root();
  const std::string root = cache_root(env_);
  if (!place.root && !options_.use_cache) {
    Result<TrustedDir> opened = open_cache_root(root, !options_.dry_run);
    if (opened)
      place.root = &own_pch_root_.emplace(std::move(*opened));
    else if (!options_.dry_run)
      place.warning = opened.why() + "; the precompiled header is built for this build only";
  }
  place.dir = place.root ? place.root->path() : "";
  // Where the run will keep it: the cache, also when a dry run has not
  // made that directory yet.
  std::error_code ec;
  if (!place.root && options_.dry_run && !fs::exists(root, ec)) place.dir = root;
  return place;
}

StepInput BuildContext::step_input(const BuildPlan& plan,
                                   const std::vector<std::string>& sources) const {
  StepInput in;
  in.sources = sources;
  in.launcher = settings.launcher;
  in.observe = options_.use_cache && !cache_root(env_).empty();
  in.load_check = options_.load_check;
  in.required_symbols = options_.required_symbols;
  if (settings.launcher.resolve_native && settings.launcher.split) {
    auto compiler = find_executable(plan.command.argv[0], env_);
    if (compiler) in.native_flags = resolve_native_flags(*compiler, env_);
  }
  return in;
}

namespace {

// The versions a failure report needs: torch's, and each plugin's package,
// release, backend and toolkit, also when the build failed resolving them.
void version_matrix(const Session& session, const Compilation& record, ReportInput& in) {
  const Paths& paths = session.site.paths;
  if (paths.torch_root)
    in.torch_version = read_package_version(*paths.torch_root + "/version.py").value_or("");
  try {
    ProcessPlugins plugins = activate_plugins(
        session.registry, PluginRequest{record.plugins, record.device, record.backend},
        session.context());
    for (const ActivePlugin& p : plugins.active)
      in.plugins.push_back(plugin_status(p, session.context()));
  } catch (const Error&) {
    // The build's own error says why; the report keeps what it has.
  }
}

}  // namespace

nlohmann::ordered_json report_of(const Compilation& record, const Environment& env) {
  ReportInput in;
  in.kbuild_argv = record.kbuild_argv;
  in.cwd = fs::current_path().string();
  in.request = record.request ? &*record.request : nullptr;
  in.plan = record.plan ? &*record.plan : nullptr;
  in.outcome = &record.outcome;
  in.steps = record.pch_lines;
  for (const std::string& line : step_lines(record.steps)) in.steps.push_back(line);
  in.notes = record.notes;
  in.compiler_path = record.request ? record.request->compiler : record.compiler;
  in.compiler_version = compiler_version(in.compiler_path, env).first_line;
  if (const Session* session = record.session) {
    in.device_files = session->device_files.files;
    in.timings = session->timings;
    if (session->profile.profile) {
      in.profile = describe(session->profile);
      in.profile_line = session->profile.profile->name;
      in.profile_evidence = session->profile.evidence;
    }
    if (auto d = session->listing(record.device)) {
      in.provider_kind = d->kind;
      in.provider_source = d->source;
    }
    if (record.request) {
      in.backend = session->backend_of(record.request->query);
      in.torch_found = record.request->use_torch && session->site.paths.torch_root.has_value();
    }
    version_matrix(*session, record, in);
  }
  in.env = &env;
  in.error = record.failure ? &*record.failure : nullptr;
  in.exit_code = record.exit_code;
  return build_report(in);
}

}  // namespace kbuild

namespace kbuild {

CacheSummary cache_summary(const Environment& env, const std::string& max_size) {
  CacheSummary summary;
  const CacheSettings settings = cache_settings(env, true, max_size);
  summary.directory = settings.root;
  summary.max_bytes = settings.max_bytes;
  if (summary.directory.empty()) throw Error(ErrorKind::usage, kNoCacheRoot);
  std::error_code ec;
  summary.exists = std::filesystem::exists(summary.directory, ec);
  if (!summary.exists) return summary;
  Result<TrustedDir> dir = open_cache_root(summary.directory, false);
  if (!dir) throw Error(ErrorKind::usage, dir.why());
  summary.local = OutputCache::open(settings).stats();
  summary.remote = remote_stats(*dir);
  return summary;
}

namespace {

nlohmann::ordered_json uncacheable_json(const CacheStats& local) {
  nlohmann::ordered_json reasons = nlohmann::ordered_json::object();
  for (const auto& [reason, n] : local.uncacheable_by_reason) reasons[reason] = n;
  return {{"total", local.uncacheable}, {"reasons", reasons}};
}

// " (side_output 2, clock 1)": the uncacheable builds by reason, if any.
std::string uncacheable_reasons(const CacheStats& local) {
  std::string text;
  for (const auto& [reason, n] : local.uncacheable_by_reason)
    text += (text.empty() ? " (" : ", ") + reason + " " + std::to_string(n);
  return text.empty() ? text : text + ")";
}

}  // namespace

std::vector<std::string> cache_summary_lines(const CacheSummary& s) {
  if (!s.exists) return {"no cache yet at " + s.directory};
  return {"cache directory  " + s.directory,
          "entries          " + std::to_string(s.local.entries),
          "size             " + human_size(s.local.bytes) + " of " + human_size(s.max_bytes) +
              " (" + std::to_string(s.local.bytes) +
              " bytes; limit: --cache-max-size or KBUILD_CACHE_MAX_SIZE)",
          "local hits       " + std::to_string(s.local.hits),
          "remote hits      " + std::to_string(s.remote.hits),
          "misses           " + std::to_string(s.local.misses),
          "uncacheable      " + std::to_string(s.local.uncacheable) + uncacheable_reasons(s.local),
          "remote misses    " + std::to_string(s.remote.misses),
          "remote errors    " + std::to_string(s.remote.errors),
          "remote down      " + std::to_string(s.remote.bytes_down) + " bytes",
          "remote up        " + std::to_string(s.remote.bytes_up) + " bytes"};
}

nlohmann::ordered_json cache_summary_json(const CacheSummary& s) {
  return {{"directory", s.directory},
          {"exists", s.exists},
          {"entries", s.local.entries},
          {"bytes", s.local.bytes},
          {"max_bytes", s.max_bytes},
          {"hits", s.local.hits},
          {"misses", s.local.misses},
          {"uncacheable", uncacheable_json(s.local)},
          {"remote",
           {{"hits", s.remote.hits},
            {"misses", s.remote.misses},
            {"errors", s.remote.errors},
            {"bytes_down", s.remote.bytes_down},
            {"bytes_up", s.remote.bytes_up}}}};
}

}  // namespace kbuild
