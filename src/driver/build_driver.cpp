#include "kbuild/build_driver.hpp"

#include <chrono>

#include "devices/device_file.hpp"
#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/build_steps.hpp"
#include "kbuild/remote_cache.hpp"
#include "run/compile_commands.hpp"
#include "run/pch.hpp"
#include "util/elapsed.hpp"

namespace kbuild {
namespace {

// The remote cache the device's file names, if any (the last default).
DeviceRemoteCache device_remote_cache(const Session& session, const std::string& device) {
  const DeviceFile* file = session.registry.device_file(device);
  if (!file || file->remote_cache_address.empty()) return {};
  return {file->remote_cache_address, file->path};
}

// Plans the PCH of `job` into `record` and, unless a dry run, reuses it or
// builds it through the build's storage (a hit, local or remote, compiles
// nothing); the kernel then includes it. Returns what holds the private .gch
// directory until the build ends.
PchResult prepare_pch(Session& session, const BuildJob& job, BuildContext& context,
                      const Environment& env, BuildListener& listener, BuildRecord& record) {
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
                  const Environment& env, BuildListener& listener, BuildRecord& record) {
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
    record.left_alone_database =
        record_compile_commands(job.compile_commands, record.steps, request.sources);
  if (job.run.dry_run) return;
  run_build(plan, record.steps, request.sources, settings, env, record.outcome);
}

}  // namespace

void drive_build(Session& session, const BuildJob& job, const Environment& env,
                 BuildListener& listener, BuildRecord& record) {
  record.request = job.request;
  record.request->profile = session.profile.profile;
  // Every setting first: the PCH step runs with them too.
  BuildContext context(session, record.device, job.run);
  listener.warnings(context.warnings);
  listener.notes(context.notes);
  std::optional<RemoteCache> remote;  // lives as long as the build
  if (job.run.use_cache && !job.run.dry_run)
    context.settings.remote =
        &remote.emplace(remote_cache_settings(job.remote_cache, job.remote_cache_readonly, env,
                                              device_remote_cache(session, record.device)));
  if (job.verbose && remote && remote->enabled())
    listener.info("remote cache: " + redact_redis_url(remote->settings().url) + " (from " +
                  remote->settings().from + ")");
  try {
    plan_and_run(session, job, context, env, listener, record);
  } catch (const Error&) {
    if (remote && !remote->warning().empty()) listener.warnings({remote->warning()});
    throw;
  }
  if (remote && !remote->warning().empty()) listener.warnings({remote->warning()});
}

std::vector<std::string> dry_run_lines(const BuildRecord& record, bool inductor_line) {
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
