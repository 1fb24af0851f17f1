#include "kbuild/driver.hpp"

#include <filesystem>
#include <thread>

#include "kbuild/build_runner.hpp"
#include "kbuild/build_steps.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/config_search.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/launcher.hpp"
#include "kbuild/output_cache.hpp"
#include "kbuild/remote_cache.hpp"
#include "util/install_layout.hpp"
#include "util/redact.hpp"

namespace kbuild {

Driver::Driver(SessionOptions options, const Environment& env)
    : options_(std::move(options)), env_(env) {}

Session& Driver::session() {
  if (!session_) session_.emplace(options_, env_);
  return *session_;
}

DeviceOptionsAnswer Driver::options(const DeviceQuery& query,
                                    const std::vector<std::string>& plugins, bool strict) {
  Session& s = session();
  ProcessPlugins active = activate_plugins(
      s.registry, PluginRequest{plugins, query.device_type, query.backend}, s.context());
  DeviceOptionsAnswer answer{
      device_options_in_process(s.registry, active, query, s.context(), strict), s.site.notes};
  answer.notes.insert(answer.notes.end(), active.notes.begin(), active.notes.end());
  answer.notes.insert(answer.notes.end(), answer.device.notes.begin(), answer.device.notes.end());
  return answer;
}

std::vector<DeviceListing> Driver::devices() {
  return session().registry.list();
}

Explanation Driver::explain(BuildRequest request, const RunOptions& options) {
  return explain_build(session(), std::move(request), options);
}

void Driver::build(const BuildJob& job, BuildListener& listener, Compilation& compilation) {
  Session& s = session();
  compilation.session = &s;
  compilation.notes = s.site.notes;
  listener.warnings(s.warnings());
  const std::string& device = job.request.query.device_type;
  if (auto warning = unknown_device_warning(s, device, job.request.strict))
    listener.unknown_device(device, *warning);
  if (auto warning = aten_capability_warning(env_)) listener.warnings({*warning});
  drive_build(s, job, env_, listener, compilation);
}

std::vector<DoctorCheck> Driver::doctor(const BuildRequest& request) {
  // Not through session(): a broken device file is one of the things it checks.
  const Site site = resolve_site(options_.site, env_);
  DoctorInput in{env_,
                 site,
                 config_sources(data_dir(env_), env_, options_.config_files),
                 request,
                 options_.allow_untrusted_config,
                 options_.site.torch_version};
  return run_doctor(in);
}

IsaAnswer Driver::isa(const std::string& compiler, const std::string& remote_cache, bool readonly) {
  return isa_answer(IsaAnswerRequest{options_.site, compiler, remote_cache, readonly}, env_);
}

CacheSummary Driver::cache_stats(const std::string& max_size) {
  return cache_summary(env_, max_size);
}

std::pair<std::string, bool> Driver::clear_cache() {
  const std::string root = cache_root(env_);
  if (root.empty()) throw Error(ErrorKind::usage, kNoCacheRoot);
  std::error_code ec;
  if (!std::filesystem::exists(root, ec)) return {root, false};
  Result<TrustedDir> dir = open_cache_root(root, false);
  if (!dir) throw Error(ErrorKind::usage, dir.why());
  if (Status cleared = kbuild::clear_cache(*dir); !cleared)
    throw Error(ErrorKind::usage, cleared.why());
  return {root, true};
}

SigningKeys Driver::cache_keygen() {
  return generate_signing_keys();
}

BatchRun Driver::build_many(const BatchRequest& request) {
  std::vector<BatchJob> batch = load_batch_manifest(request.manifest);
  // Read before anything runs: a wrong baseline costs no build.
  std::optional<std::vector<BatchSummaryRow>> baseline;
  if (!request.baseline.empty()) {
    check_comparable(batch);
    baseline = load_batch_baseline(request.baseline);
  }
  if (request.fail_on_regressions && !baseline)
    throw Error(ErrorKind::usage,
                "--fail-on regressions compares with a baseline: give --baseline PREVIOUS.json "
                "(the --json summary of an earlier run)");
  BatchRun run;
  run.parallel = request.jobs ? request.jobs : std::max(1u, std::thread::hardware_concurrency());
  run.results =
      run_batch(batch, {kbuild_program()}, run.parallel, request.fail_fast, request.progress);
  run.rows = summarize_batch(batch, run.results);
  if (baseline) run.comparisons = compare_to_baseline(run.rows, *baseline);
  return run;
}

CompilerRun Driver::compile(const CompilerCall& call, BuildListener& listener) {
  CacheSettings cache_settings;
  cache_settings.root = cache_root(env_);
  cache_settings.enabled = env_.get_nonempty("KBUILD_NO_CACHE").value_or("0") == "0";
  cache_settings.compress = cache_compression(env_);
  OutputCache cache = OutputCache::open(cache_settings);
  if (!cache.problem().empty()) listener.warnings({cache.problem()});
  // The remote cache exactly as a build has it (KBUILD_REMOTE_CACHE and its
  // signing, read-only, timeout and lease settings), so that a fleet's
  // routed compiles are shared too.
  RemoteCache remote(remote_cache_settings("", false, env_));
  if (remote.enabled())
    listener.info("remote cache: " + redact_redis_url(remote.settings().url) + " (from " +
                  remote.settings().from + ")");
  BuildSettings settings;
  settings.cache = &cache;
  settings.remote = &remote;
  settings.launcher = parse_launcher(env_.get_nonempty("KBUILD_LAUNCHER").value_or(""));
  StepInput in;
  in.sources = call.sources;
  // A split launcher's link would be assembled anew; the words must stay.
  in.launcher = settings.launcher.split && links(call.plan.kind) ? Launcher{} : settings.launcher;
  in.record_inputs = cache_settings.enabled && !cache_settings.root.empty();
  const std::vector<Step> steps = plan_steps(call.plan, in);
  CompilerRun run;
  try {
    run_build(call.plan, steps, call.sources, settings, env_, run.outcome);
  } catch (const Error& e) {
    if (!remote.warning().empty()) listener.warnings({remote.warning()});
    // The compiler said why on stderr; its own exit code, as without kbuild.
    const bool compiler_failed =
        e.kind() == ErrorKind::compile_failed || e.kind() == ErrorKind::link_failed;
    const std::optional<ProcessResult>& process = run.outcome.process;
    run.failure = e;
    run.compiler_said_why = compiler_failed && process && process->exited && process->exit_code;
    run.exit_code = run.compiler_said_why ? process->exit_code : exit_code(e.kind());
    return run;
  }
  if (!remote.warning().empty()) listener.warnings({remote.warning()});
  return run;
}

std::string only_with_library_path_note(const BuildPlan& plan, const LoadCheckResult& load) {
  std::string dirs;
  for (const std::string& d : plan.options.values(OptionList::libraries_dirs))
    dirs += (dirs.empty() ? "" : ":") + d;
  return plan.output + " loads only with its library dirs (" + dirs +
         ") on LD_LIBRARY_PATH, as the check gave it: without them, " +
         load.only_with_library_path +
         "; a process without them cannot load it: link with -Wl,-rpath,DIR for those dirs (a "
         "device file's ldflags)";
}

}  // namespace kbuild
