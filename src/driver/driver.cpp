#include "driver/driver.hpp"

#include <chrono>
#include <filesystem>
#include <thread>

#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/plugin.hpp"
#include "diagnose/doctor.hpp"
#include "diagnose/isa_answer.hpp"
#include "plan/plan.hpp"
#include "run/build_runner.hpp"
#include "run/compile_commands.hpp"
#include "run/output_cache.hpp"
#include "run/pch.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "site/isa.hpp"
#include "util/digest.hpp"
#include "util/environment.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

Driver::Driver(SessionOptions options, const Environment& env)
    : options_(std::move(options)), env_(env) {}

Driver::~Driver() = default;

Session& Driver::session() {
  if (!session_) session_ = std::make_unique<Session>(options_, env_);
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

std::vector<std::string> Driver::dry_run(BuildJob job, BuildListener& listener,
                                         bool inductor_line) {
  job.run.dry_run = true;
  Compilation compilation;
  build(job, listener, compilation);
  return dry_run_lines(compilation, inductor_line);
}

BuiltKernel Driver::build(BuildJob job, BuildListener& listener) {
  job.run.dry_run = false;
  Compilation compilation;
  build(job, listener, compilation);
  if (compilation.left_alone_database) throw *compilation.left_alone_database;
  return {compilation.plan->output, dry_run_lines(compilation, false),
          cache_status_name(compilation.outcome.cache), compilation.notes};
}

std::vector<DoctorCheck> Driver::doctor(const BuildRequest& request) {
  // Not through session(): a broken device file is one of the things it checks.
  const Site site = resolve_site(options_.site, env_);
  DoctorInput in{env_,
                 site,
                 device_file_sources(data_dir(env_), env_, options_.device_files),
                 request,
                 options_.allow_untrusted_device_files,
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

RemoteCacheCheck Driver::check_remote_cache(const std::string& address) {
  const RemoteCacheSettings settings = remote_cache_settings(address, false, env_);
  if (settings.url.empty()) return {};
  return {redact_address(settings.url), settings.from};
}

BatchRun Driver::build_many(const BatchRequest& request) const {
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
  const std::string program =
      options_.kbuild_program.empty() ? installed_kbuild() : options_.kbuild_program;
  run.results = run_batch(batch, {program}, run.parallel, request.fail_fast, request.progress);
  run.rows = summarize_batch(batch, run.results);
  if (baseline) run.comparisons = compare_to_baseline(run.rows, *baseline);
  return run;
}

CompilerRun Driver::compile(const CompilerCall& call, BuildListener& listener) {
  // Resolved as a build's are (the size limit, the remote cache with its
  // signing, read-only, timeout and lease settings), from compiler mode's
  // variables, so that a fleet's routed compiles are kept and shared alike.
  const RunSettings run_settings = resolve_run_settings(compiler_mode_request(env_), env_);
  OutputCache cache = OutputCache::open(run_settings.cache);
  if (!cache.problem().empty()) listener.warnings({cache.problem()});
  RemoteCache remote(run_settings.remote);
  if (remote.enabled())
    listener.info("remote cache: " + redact_address(remote.settings().url) + " (from " +
                  remote.settings().from + ")" +
                  (remote.leases() ? "" : "; " + remote.lease_note()));
  BuildSettings settings;
  settings.cache = &cache;
  settings.remote = &remote;
  settings.launcher = run_settings.launcher;
  settings.timeout = run_settings.timeout;
  StepInput in;
  in.sources = call.sources;
  // A split launcher's link would be assembled anew; the words must stay.
  in.launcher = settings.launcher.split && links(call.plan.kind) ? Launcher{} : settings.launcher;
  in.observe = run_settings.cache.enabled && !run_settings.cache.root.empty();
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
         load.only_with_library_path + "; a process without them cannot load it: " +
         rpath_hint(plan.options.values(OptionList::libraries_dirs)) +
         " (--check-load=strict makes this a failure)";
}

}  // namespace kbuild

namespace kbuild {
namespace {

// Plans the PCH of `job` into `record` and, unless a dry run, reuses it or
// builds it through the build's storage (a hit, local or remote, compiles
// nothing); the kernel then includes it. Returns what holds the private .gch
// directory until the build ends.
PchResult prepare_pch(Session& session, const BuildJob& job, BuildContext& context,
                      const Environment& env, BuildListener& listener, Compilation& record) {
  if (job.request.include_pch)
    throw Error(ErrorKind::usage, "--pch and --include-pch exclude each other");
  BuildRequest& request = *record.request;
  const BuildSettings& settings = context.settings;
  BuildContext::PchPlace place = context.pch_place();
  if (!place.warning.empty()) listener.warnings({place.warning});
  // With a remote cache, a .gch recorded without its shared key is built
  // again (a dry run opens none: it plans the reuse).
  const bool shared = settings.remote && settings.remote->enabled();
  PchPlan pch_plan = plan_pch(request, job.pch, session.registry, session.context(), place.dir,
                              place.root, settings.launcher, env, shared);
  record.pch_lines = pch_lines(pch_plan);
  request.include_pch = pch_plan.include;
  if (job.run.dry_run) return {};
  PchResult pch =
      run_pch(pch_plan, place.root, settings, session.registry, session.context(), request, env);
  if (pch.kernel_parts) context.settings.remote_parts = *pch.kernel_parts;
  listener.info(std::string("pch: ") + (pch.built ? "built " : "reused ") + pch.include + ".gch" +
                (pch.remote ? " (a remote cache hit)"
                 : pch.hit  ? " (a cache hit)"
                            : ""));
  request.include_pch = pch.include;
  context.settings.key_extra.push_back("pch " + pch.identity);
  return pch;
}

void plan_and_run(Session& session, const BuildJob& job, BuildContext& context,
                  const Environment& env, BuildListener& listener, Compilation& record) {
  PchResult pch;  // holds a private .gch directory until the build ends
  if (!job.pch.empty()) pch = prepare_pch(session, job, context, env, listener, record);
  BuildRequest& request = *record.request;
  const BuildSettings& settings = context.settings;
  auto start = std::chrono::steady_clock::now();
  record.plan = plan_build(request, session.registry, session.context());
  const BuildPlan& plan = *record.plan;
  record.steps = plan_steps(plan, context.step_input(plan, request.sources));
  session.timings.push_back({"resolve", seconds_since(start)});
  record.notes.insert(record.notes.end(), plan.notes.begin(), plan.notes.end());
  if (settings.launcher.distributes && !job.run.resolve_native)
    record.notes.push_back(settings.launcher.name() +
                           " compiles -march=native only on this machine; add "
                           "--resolve-native to send the compile steps to other hosts");
  listener.plan_notes(record.notes);
  // Checked here, before anything is recorded, so a dry run refuses what the build would.
  check_build_files(request.sources, plan.output);
  if (!job.compile_commands.empty())
    record.left_alone_database = record_compile_commands(
        job.compile_commands, record.steps, request.sources, compile_commands_lock_wait(env));
  if (job.run.dry_run) return;
  run_build(plan, record.steps, request.sources, settings, env, record.outcome);
}

}  // namespace

void drive_build(Session& session, const BuildJob& job, const Environment& env,
                 BuildListener& listener, Compilation& record) {
  record.request = job.request;
  record.request->profile = session.profile.profile;
  // The device asked for, also when the caller (an embedding program) did
  // not fill the record in: its file's launcher and remote cache apply.
  if (record.device.empty()) record.device = job.request.query.device_type;
  // Every setting first, resolved as explain and `kbuild cc` resolve them:
  // the PCH step runs with them too, and a dry run refuses what the build
  // would.
  RunSettingsRequest run;
  run.run = job.run;
  run.remote_cache = job.remote_cache;
  run.remote_cache_readonly = job.remote_cache_readonly;
  run.device = job.request.query.device_type;
  run.registry = &session.registry;
  BuildContext context(session, run);
  context.settings.processes = record.processes;
  context.settings.observer = record.observer;
  listener.warnings(context.warnings);
  listener.notes(context.notes);
  const std::optional<RemoteCache>& remote = context.remote;
  if (job.verbose && remote && !job.run.dry_run)
    listener.info("remote cache: " + redact_address(remote->settings().url) + " (from " +
                  remote->settings().from + ")" +
                  (remote->leases() ? "" : "; " + remote->lease_note()));
  try {
    plan_and_run(session, job, context, env, listener, record);
  } catch (const Error&) {
    if (remote && !remote->warning().empty()) listener.warnings({remote->warning()});
    throw;
  }
  if (remote && !remote->warning().empty()) listener.warnings({remote->warning()});
}

std::vector<std::string> dry_run_lines(const Compilation& record, bool inductor_line) {
  const std::vector<Step>& steps = record.steps;
  if (inductor_line) {
    std::size_t commands = 0;
    for (const Step& s : steps) commands += s.kind == StepKind::command;
    if (commands != 1 || !record.pch_lines.empty() || steps.size() != 1)
      throw Error(ErrorKind::usage, "--inductor-line prints a one-step plan, and this one has " +
                                        std::to_string(steps.size() + record.pch_lines.size()) +
                                        " steps; drop --inductor-line to see them");
    return {record.plan->command.inductor_line};
  }
  std::vector<std::string> lines = record.pch_lines;
  for (std::string& line : step_lines(steps)) lines.push_back(std::move(line));
  return lines;
}

std::optional<std::string> unknown_device_warning(const Session& session, const std::string& device,
                                                  bool strict) {
  auto match = session.device_suggestion(device);
  if (!match) return std::nullopt;
  std::string what = "unknown device '" + device + "'; did you mean '" + *match + "'?";
  if (strict) throw Error(ErrorKind::usage, what + " (--strict)");
  return what + " (building with no device options; --strict makes this an error)";
}

}  // namespace kbuild
