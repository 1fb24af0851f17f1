// The kbuild command line: parses arguments (CLI11), calls a Driver method
// per command, prints what it answers and owns the exit code.
#include "commands.hpp"

#include <unistd.h>

#include <iostream>
#include <optional>

#include "cc_command.hpp"
#include "command_line.hpp"
#include "diagnose/report.hpp"
#include "driver/doctor.hpp"
#include "driver/driver.hpp"
#include "kbuild_config.h"
#include "printing.hpp"
#include "run/cache_stats.hpp"
#include "run/isa_answer.hpp"
#include "util/environment.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"

using namespace kbuild;
using kbuild::cli::CommandLine;
using kbuild::cli::Console;
using kbuild::cli::ConsoleListener;
using kbuild::cli::make_request;

namespace {

// The session's warnings, then a device one typo from a registered one:
// what `explain` and `options` say before their answer.
std::string open_session(Driver& driver, const CommandLine& cl, const Console& console) {
  Session& session = driver.session();
  console.warnings(session.warnings());
  auto warning = unknown_device_warning(session, cl.device, cl.strict);
  if (!warning) return "";
  console.warnings({*warning});
  return cl.device;
}

// What the command line asks of a build: its request, or, when it cannot
// be made, what it asked (for the report) and why not.
BuildRequest build_request(const CommandLine& cl, const Environment& env,
                           std::optional<Error>& refused) {
  try {
    return make_request(cl, env);
  } catch (const Error& e) {
    refused = e;
    BuildRequest asked;
    asked.query = DeviceQuery{cl.device, cl.aot, cl.compile_only, cl.backend};
    asked.plugins = cl.plugins;
    asked.compiler = compiler_of(cl, env);
    return asked;
  }
}

int build_command(Driver& driver, const CommandLine& cl, const Console& console,
                  const std::vector<std::string>& kbuild_argv) {
  const Environment& env = driver.env();
  if (Status placed = report_target_problem(cl); !placed) {
    console.error(placed.error());  // said before anything runs; no report written over it
    return exit_code(placed.kind());
  }
  ConsoleListener listener(console, cl.verbose);
  std::optional<Error> refused;
  BuildRequest request = build_request(cl, env, refused);
  std::optional<Compilation> planned;
  try {
    planned.emplace(refused ? refused_compilation(std::move(request), *refused)
                            : driver.plan(std::move(request), listener));
  } catch (const Error& e) {  // the session: a device file, a site setting
    planned.emplace(refused_compilation(build_request(cl, env, refused), e));
  }
  Compilation& compilation = *planned;
  try {
    driver.run(compilation, listener);
    if (cl.dry_run)
      cli::print_lines(dry_run_lines(compilation, cl.inductor_line));
    else
      say_what_ran(console, compilation.outcome, compilation.plan->output);
    if (compilation.outcome.load && !compilation.outcome.load->only_with_library_path.empty())
      console.notes({only_with_library_path_note(*compilation.plan, *compilation.outcome.load)});
    if (compilation.left_alone_database) throw *compilation.left_alone_database;
  } catch (const Error& e) {
    if (!compilation.failure) {  // printing it, or the database left alone
      compilation.failure = e;
      compilation.exit_code = exit_code(e.kind());
    }
  }
  // A build that failed before its notes were said still says why torch
  // or a root is missing: it may be why it failed.
  if (!listener.plan_notes_said)
    cli::say_notes(console, cl.verbose, compilation.notes, listener.warned_device());
  if (!cl.report.empty()) {
    Status written = write_file_atomically(cl.report, driver.report(compilation, kbuild_argv));
    if (!written) console.warnings({"--report: " + written.why()});
  }
  if (compilation.failure) console.error(*compilation.failure);
  return compilation.exit_code;
}

int explain_command(Driver& driver, const CommandLine& cl, const Console& console) {
  const std::string warned_device = open_session(driver, cl, console);
  Explanation explanation = driver.explain(make_request(cl, driver.env()));
  cli::say_notes(console, cl.verbose, explanation.plan.notes, warned_device);
  if (cl.json)
    cli::print_json(explanation_json(explanation));
  else
    cli::print_lines(explanation_lines(explanation));
  return 0;
}

int options_command(Driver& driver, const CommandLine& cl, const Console& console) {
  const std::string warned_device = open_session(driver, cl, console);
  DeviceOptionsAnswer answer = driver.options(
      DeviceQuery{cl.device, cl.aot, cl.compile_only, cl.backend}, cl.plugins, cl.strict);
  cli::say_notes(console, cl.verbose, answer.notes, warned_device);
  cli::print_options(answer, cl.json);
  return 0;
}

// Exit codes of `doctor`: the worst check.
constexpr int kDoctorWarn = 11, kDoctorFail = 12;

int doctor_command(Driver& driver, const CommandLine& cl, const Console& console) {
  // doctor builds nothing (it takes no build option): a request for the
  // device and compiler only.
  std::vector<DoctorCheck> checks = driver.doctor(make_request(cl, driver.env()));
  cli::print_doctor(checks, cl.json, console);
  switch (worst(checks)) {
    case CheckStatus::ok: return 0;
    case CheckStatus::warn: return kDoctorWarn;
    case CheckStatus::fail: return kDoctorFail;
  }
  return kDoctorFail;
}

// `kbuild isa [--json]`: Inductor's valid ISAs and pick, and what for.
int isa_command(Driver& driver, const CommandLine& cl, const Console& console) {
  IsaAnswer answer =
      driver.isa(compiler_of(cl, driver.env()), cl.remote_cache, cl.remote_cache_readonly);
  console.warnings(answer.warnings);
  cli::say_notes(console, cl.verbose, answer.notes);
  if (cl.json)
    cli::print_json(answer.json);
  else
    cli::print_lines(isa_answer_lines(answer.json));
  return 0;
}

// Exit code of `build-many` when any build failed.
constexpr int kBatchFailed = 13;

int build_many_command(Driver& driver, const CommandLine& cl, const Console& console) {
  const bool tty = isatty(STDERR_FILENO);
  BatchRequest request{cl.build_list,
                       cl.jobs,
                       cl.fail_fast,
                       cl.baseline,
                       cl.baseline_missing == "empty",
                       cl.fail_on == "regressions",
                       nullptr};
  if (!cl.baseline_missing.empty() && cl.baseline.empty())  // never silently ignored
    throw Error(ErrorKind::usage,
                "--baseline-missing says what a missing --baseline file means, and no "
                "--baseline was given: give --baseline PREVIOUS.json too");
  if (tty)
    request.progress = [](const BatchProgress& p) {
      double eta = p.done ? p.elapsed / p.done * (p.total - p.done) : 0;
      std::fprintf(stderr, "\r\033[K[%zu/%zu] %zu failed, %.0fs elapsed, ETA %.0fs", p.done,
                   p.total, p.failed, p.elapsed, eta);
      if (p.done == p.total) std::fprintf(stderr, "\r\033[K");
    };
  BatchRun run = driver.build_many(request);
  if (tty) std::fprintf(stderr, "\r\033[K");
  // A failure's output, and what a build that succeeded printed (its
  // warnings: never dropped because the build went on).
  for (const BatchResult& r : run.results) {
    if (!r.started || (r.exit_code == 0 && r.output.empty())) continue;
    const char* stage = stage_of_exit_code(r.exit_code);
    std::cerr << "== " << r.name << " (";
    if (r.exit_code == 0)
      std::cerr << "ok";
    else
      std::cerr << (*stage ? stage : "failed") << ", exit " << r.exit_code;
    std::cerr << "):\n" << r.output;
  }
  console.notes(run.notes);
  cli::print_batch(run, cl.json);
  if (request.fail_on_regressions) return regressed(*run.comparisons) ? kBatchFailed : 0;
  const bool any_failed = std::any_of(run.rows.begin(), run.rows.end(),
                                      [](const BatchSummaryRow& r) { return r.status != "ok"; });
  return any_failed ? kBatchFailed : 0;
}

int cache_command(Driver& driver, const CommandLine& cl) {
  const std::string& action = cl.cache_action;
  if (!cl.cache_max_size.empty() && action != "stats")  // never a setting silently ignored
    throw Error(ErrorKind::usage,
                "--cache-max-size is for kbuild cache stats (and builds), not " + action);
  if (cl.json && action != "stats")
    throw Error(ErrorKind::usage, "--json is for kbuild cache stats, not " + action);
  if (!cl.remote_cache.empty() && action != "check")
    throw Error(ErrorKind::usage,
                "--remote-cache is for kbuild cache check (and builds), not " + action);
  if (action == "check") {
    const RemoteCacheCheck check = driver.check_remote_cache(cl.remote_cache);
    std::cout << (check.address.empty()
                      ? std::string(
                            "no remote cache (--remote-cache and KBUILD_REMOTE_CACHE unset)")
                      : "remote cache: " + check.address + " (from " + check.from + ")")
              << "\n";
  } else if (action == "keygen") {
    SigningKeys keys = driver.cache_keygen();
    std::cout << "KBUILD_REMOTE_CACHE_SIGNING_KEY=" << keys.secret_hex << "  # writers only\n"
              << "KBUILD_REMOTE_CACHE_VERIFY_KEY=" << keys.public_hex << "\n";
  } else if (action == "stats") {
    const CacheSummary summary = driver.cache_stats(cl.cache_max_size);
    if (cl.json)
      cli::print_json(cache_summary_json(summary));
    else
      cli::print_lines(cache_summary_lines(summary));
  } else {
    auto [root, existed] = driver.clear_cache();
    std::cout << (existed ? "cleared " : "nothing to clear: ") << root << "\n";
  }
  return 0;
}

}  // namespace

namespace kbuild::cli {

int run_command(int argc, char** argv, const Environment& env) {
  CommandLine cl;
  if (auto code = kbuild::cli::compiler_mode(argc, argv, env)) return *code;  // kbuild cc, g++
  const bool no_color = env.get_nonempty("NO_COLOR").has_value();
  if (auto answered = parse_command_line(
          argc, argv,
          [&env] { return std::string("kbuild ") + KBUILD_VERSION + "\n" + version_details(env); },
          Console(false, false, no_color), cl))
    return *answered;

  Console console(cl.quiet, cl.verbose, no_color);
  // build-many's builds run this kbuild again.
  Driver driver(
      SessionRequest{cl.site, cl.device_files, cl.allow_untrusted_device_files, kbuild_program()},
      env);
  try {
    if (cl.command == "options") return options_command(driver, cl, console);
    if (cl.command == "devices") {
      console.warnings(driver.session().warnings());
      cli::print_devices(driver.devices(), cl.json);
      return 0;
    }
    if (cl.command == "doctor") return doctor_command(driver, cl, console);
    if (cl.command == "isa") return isa_command(driver, cl, console);
    if (cl.command == "cache") return cache_command(driver, cl);
    if (cl.command == "build-many") return build_many_command(driver, cl, console);
    if (cl.command == "explain") return explain_command(driver, cl, console);
    if (auto misplaced = misplaced_subcommand(cl)) throw Error(ErrorKind::usage, *misplaced);
    return build_command(driver, cl, console, std::vector<std::string>(argv, argv + argc));
  } catch (const Error& e) {
    console.error(e);
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    console.error("internal", std::string(e.what()) + " (please report this)");
    return exit_code(ErrorKind::internal);
  }
}

}  // namespace kbuild::cli
