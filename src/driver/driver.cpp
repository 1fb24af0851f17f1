#include "driver/driver.hpp"

#include <chrono>
#include <filesystem>
#include <thread>

#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/plugin.hpp"
#include "diagnose/explain.hpp"
#include "diagnose/report.hpp"
#include "driver/doctor.hpp"
#include "plan/plan.hpp"
#include "run/cache_stats.hpp"
#include "run/isa_answer.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "site/isa.hpp"
#include "site/site.hpp"
#include "util/digest.hpp"
#include "util/environment.hpp"
#include "util/json.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

Driver::Driver(SessionRequest options, const Environment& env)
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

namespace {

// Says nothing: `explain` prints its answer, not a build's warnings.
struct QuietListener : BuildListener {
  void warnings(const std::vector<std::string>& /*lines*/) override {}
  void notes(const std::vector<std::string>& /*lines*/) override {}
  void plan_notes(const std::vector<std::string>& /*lines*/) override {}
  void info(const std::string& /*line*/) override {}
};

}  // namespace

Explanation Driver::explain(BuildRequest request) {
  // Planned as a build would be (a dry run: nothing is written).
  if (request.sources.empty())
    throw Error(ErrorKind::usage,
                "explain needs a source: kbuild explain [build options] SOURCE [-o OUTPUT] "
                "explains the command that would build it");
  request.dry_run = true;  // explain runs nothing
  QuietListener quiet;
  Compilation compilation = plan_compilation(session(), std::move(request), quiet);
  if (compilation.failure) throw *compilation.failure;
  return explanation_of(compilation);
}

Compilation Driver::plan(BuildRequest request, BuildListener& listener) {
  Session& s = session();
  listener.warnings(s.warnings());
  const std::string& device = request.query.device_type;
  if (auto warning = unknown_device_warning(s, device, request.strict))
    listener.unknown_device(device, *warning);
  if (auto warning = aten_capability_warning(env_)) listener.warnings({*warning});
  return plan_compilation(s, std::move(request), listener);
}

void Driver::run(Compilation& compilation, BuildListener& listener) {
  run_compilation(compilation, listener, env_);
}

std::string Driver::report(const Compilation& compilation,
                           const std::vector<std::string>& kbuild_argv) {
  // Asked here, not in diagnose, which runs nothing.
  const std::string& compiler =
      compilation.request ? compilation.request->compiler : compilation.asked.compiler;
  const std::string version = compiler_version(compiler, env_).first_line;
  return dump_json(report_of(compilation, kbuild_argv, env_, version), 2) + "\n";
}

std::vector<std::string> Driver::dry_run(BuildRequest request, BuildListener& listener,
                                         bool inductor_line) {
  request.dry_run = true;
  Compilation compilation = plan(std::move(request), listener);
  run(compilation, listener);
  return dry_run_lines(compilation, inductor_line);
}

BuiltKernel Driver::build(BuildRequest request, BuildListener& listener) {
  request.dry_run = false;
  Compilation compilation = plan(std::move(request), listener);
  run(compilation, listener);
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
  return isa_answer(IsaAnswerRequest{options_.site, compiler, remote_cache, readonly}, env_,
                    system_file_system());
}

CacheSummary Driver::cache_stats(const std::string& max_size) {
  return cache_summary(env_, max_size, system_file_system());
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
  std::vector<BatchJob> batch = load_build_list(request.build_list);
  // Read before anything runs: a wrong baseline costs no build.
  std::optional<std::vector<BatchSummaryRow>> baseline;
  std::vector<std::string> notes;
  if (request.baseline_missing_empty && request.baseline.empty())
    throw Error(ErrorKind::usage,
                "--baseline-missing says what a missing --baseline file means, and no "
                "--baseline was given: give --baseline PREVIOUS.json too");
  if (!request.baseline.empty()) {
    check_comparable(batch);
    std::error_code ec;
    const bool absent =
        !std::filesystem::exists(std::filesystem::symlink_status(request.baseline, ec));
    if (request.baseline_missing_empty && absent) {
      baseline.emplace();
      notes.push_back("--baseline " + request.baseline +
                      " does not exist: compared with an empty baseline "
                      "(--baseline-missing=empty), so every build is added or a new failure; "
                      "save this run's --json summary there for the next run");
    } else {
      baseline = load_batch_baseline(request.baseline);
    }
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
  run.notes = std::move(notes);
  return run;
}

Compilation Driver::compile(const CompilerCall& call, BuildListener& listener) {
  Compilation compilation = compiler_compilation(call, env_, system_file_system(), listener);
  const RemoteCache& remote = *compilation.remote;
  if (remote.enabled())
    listener.info("remote cache: " + redact_address(remote.settings().url) + " (from " +
                  remote.settings().from + ")" +
                  (remote.leases() ? "" : "; " + remote.lease_note()));
  try {
    run_compilation(compilation, listener, env_);
  } catch (const Error&) {
    // The compiler said why on stderr: its own exit code, as without kbuild.
    if (compiler_said_why(compilation))
      compilation.exit_code = compilation.outcome.process->exit_code;
  }
  return compilation;
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
