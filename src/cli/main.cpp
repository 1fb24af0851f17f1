// The kbuild command line: parses arguments (CLI11), calls the library, owns
// all printing and the exit code.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cc_command.hpp"
#include "command_line.hpp"
#include "console.hpp"
#include "kbuild/batch.hpp"
#include "kbuild/build_context.hpp"
#include "kbuild/build_driver.hpp"
#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/build_steps.hpp"
#include "kbuild/byte_size.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/cache_summary.hpp"
#include "kbuild/compile_commands.hpp"
#include "kbuild/config_search.hpp"
#include "kbuild/doctor.hpp"
#include "kbuild/elapsed.hpp"
#include "kbuild/error.hpp"
#include "kbuild/explain.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/install_layout.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/isa_answer.hpp"
#include "kbuild/json_text.hpp"
#include "kbuild/launcher.hpp"
#include "kbuild/load_check.hpp"
#include "kbuild/note_summary.hpp"
#include "kbuild/package_version.hpp"
#include "kbuild/pch.hpp"
#include "kbuild/plugin_spec.hpp"
#include "kbuild/plugin_status.hpp"
#include "kbuild/profile_select.hpp"
#include "kbuild/remote_cache.hpp"
#include "kbuild/report.hpp"
#include "kbuild/shell.hpp"
#include "kbuild/signing.hpp"
#include "kbuild/site.hpp"
#include "kbuild/version_details.hpp"
#include "kbuild_config.h"

namespace fs = std::filesystem;
using namespace kbuild;
using kbuild::cli::BuildCli;
using kbuild::cli::CommandLine;
using kbuild::cli::CommonOptions;
using kbuild::cli::Console;

namespace {

SessionOptions session_options(const CommonOptions& o) {
  return SessionOptions{o.site, o.config_files, o.allow_untrusted_config};
}

std::string compiler_of(const CommonOptions& o, const Environment& env) {
  if (!o.cxx.empty()) return o.cxx;
  return env.get_nonempty("CXX").value_or("g++");
}

BuildRequest make_request(const CommonOptions& common, const BuildCli& b, const Environment& env) {
  if (b.precompile + b.preprocess + common.compile_only > 1)
    throw Error(ErrorKind::usage,
                "--compile-only, --precompile and --preprocess exclude each other");
  BuildRequest r;
  r.query = DeviceQuery{common.device, common.aot, common.compile_only, common.backend};
  r.plugins = common.plugins;
  r.kind = b.precompile          ? OutputKind::precompiled_header
           : b.preprocess        ? OutputKind::preprocessed
           : common.compile_only ? OutputKind::object
                                 : OutputKind::shared_library;
  r.sources = b.sources;
  r.output = b.output;
  r.compiler = compiler_of(common, env);
  r.machine = machine_name();
  r.strict = common.strict;
  r.min_optimize = b.min_optimize;
  r.debug = b.debug;
  r.warning_all = !b.no_warning_all;
  r.use_torch = !common.site.no_torch;
  // "auto" is picked from the CPU only if the plan needs an ISA.
  auto isa = common.isa == "auto" ? std::nullopt : parse_isa(common.isa, CpuFeatures{}, env);
  if (common.isa != "auto" && !isa)
    throw Error(ErrorKind::usage, "unknown --isa '" + common.isa +
                                      "' (auto, none, avx2, avx512, avx512_vnni, amx, neon, "
                                      "sve256, with optional +bf16/+fp16)");
  r.isa = isa;
  r.extra_flags = b.extra_flags;
  if (!b.include_pch.empty()) r.include_pch = b.include_pch;
  r.include_dirs = b.includes;
  r.definitions = b.definitions;
  r.libraries_dirs = b.lib_dirs;
  r.libraries = b.libs;
  return r;
}

// What the build asks of the run: cache, launcher, timeout, load check.
RunOptions run_options(const BuildCli& b) {
  RunOptions o;
  o.use_cache = !b.no_cache;
  o.cache_max_size = b.cache_max_size;
  o.dry_run = b.dry_run;
  o.launcher = b.launcher;
  o.resolve_native = b.resolve_native;
  o.timeout_s = b.timeout_s;
  o.load_check = b.check_load || !b.required_symbols.empty();
  o.required_symbols = b.required_symbols;
  return o;
}

// Where the report would go is checked before anything runs.
std::optional<Error> report_target_problem(const CommonOptions& common, const BuildCli& b) {
  if (b.report.empty()) return std::nullopt;
  OutputKind kind = b.precompile          ? OutputKind::precompiled_header
                    : b.preprocess        ? OutputKind::preprocessed
                    : common.compile_only ? OutputKind::object
                                          : OutputKind::shared_library;
  std::string output = !b.output.empty()   ? b.output
                       : b.sources.empty() ? ""
                                           : default_output(b.sources.front(), kind);
  return report_path_problem(b.report, b.sources, output);
}

// Notes as the user asked for them: folded ("-v lists them"), or every one.
// `warned_device`: a device already warned about as unknown, whose note
// would only repeat the warning.
void say_notes(const Console& console, bool verbose, const std::vector<std::string>& notes,
               const std::string& warned_device = "") {
  if (console.quiet()) return;
  std::vector<std::string> said;
  const std::string repeat = "unknown device '" + warned_device + "'";
  for (const std::string& note : notes)
    if (warned_device.empty() || note.rfind(repeat, 0) != 0) said.push_back(note);
  console.notes(verbose ? said : summarise_notes(said));
}

// Warns about a device one typo from a registered one (an error with
// --strict). Returns the device when it warned ("" when it did not).
std::string check_device_name(const Session& session, const CommonOptions& common,
                              const Console& console) {
  auto warning = unknown_device_warning(session, common.device, common.strict);
  if (!warning) return "";
  console.warnings({*warning});
  return common.device;
}

// Prints what drive_build says, as it says it.
class ConsoleListener : public BuildListener {
 public:
  ConsoleListener(const Console& console, bool verbose, std::string warned_device)
      : console_(console), verbose_(verbose), warned_device_(std::move(warned_device)) {}
  void warnings(const std::vector<std::string>& lines) override { console_.warnings(lines); }
  void notes(const std::vector<std::string>& lines) override { console_.notes(lines); }
  void plan_notes(const std::vector<std::string>& lines) override {
    say_notes(console_, verbose_, lines, warned_device_);
    plan_notes_said = true;
  }
  void info(const std::string& line) override { console_.info(line); }
  const std::string& warned_device() const { return warned_device_; }
  bool plan_notes_said = false;

 private:
  const Console& console_;
  bool verbose_;
  std::string warned_device_;
};

int build_command(const CommonOptions& common, const BuildCli& b, const Environment& env,
                  const Console& console, const std::vector<std::string>& kbuild_argv) {
  std::optional<Session> session;
  BuildRecord record;
  record.kbuild_argv = kbuild_argv;
  record.device = common.device;
  record.plugins = common.plugins;
  record.backend = common.backend;
  record.compiler = compiler_of(common, env);
  if (auto wrong = report_target_problem(common, b)) {
    console.error(*wrong);  // said before anything runs; no report written over it
    return exit_code(wrong->kind());
  }
  std::optional<ConsoleListener> listener;
  try {
    session.emplace(session_options(common), env);
    record.session = &*session;
    console.warnings(session->warnings());
    record.notes = session->site.notes;
    listener.emplace(console, common.verbose, check_device_name(*session, common, console));
    BuildJob job{make_request(common, b, env), run_options(b),     b.pch,         b.remote_cache,
                 b.remote_cache_readonly,      b.compile_commands, common.verbose};
    if (auto warning = aten_capability_warning(env)) console.warnings({*warning});
    drive_build(*session, job, env, *listener, record);
    if (b.dry_run)
      for (const std::string& line : dry_run_lines(record, b.inductor_line))
        std::cout << line << "\n";
    else
      say_what_ran(console, record.outcome, record.plan->output);
    if (record.outcome.load && !record.outcome.load->only_with_library_path.empty()) {
      std::string dirs;
      for (const std::string& d : record.plan->options.values(OptionList::libraries_dirs))
        dirs += (dirs.empty() ? "" : ":") + d;
      console.notes({record.plan->output + " loads only with its library dirs (" + dirs +
                     ") on LD_LIBRARY_PATH, as the check gave it: without them, " +
                     record.outcome.load->only_with_library_path +
                     "; a process without them cannot load it: link with -Wl,-rpath,DIR for "
                     "those dirs (a device file's ldflags)"});
    }
    if (record.left_alone_database) throw *record.left_alone_database;
  } catch (const Error& e) {
    record.failure = e;
  }
  // A build that failed before its notes were said still says why torch
  // or a root is missing: it may be why it failed.
  if (!listener || !listener->plan_notes_said)
    say_notes(console, common.verbose, record.notes, listener ? listener->warned_device() : "");
  record.exit_code = record.failure ? exit_code(record.failure->kind()) : 0;
  if (!b.report.empty()) {
    Status written = write_file_atomically(b.report, dump_json(report_of(record, env), 2) + "\n");
    if (!written) console.warnings({"--report: " + written.why()});
  }
  if (record.failure) console.error(*record.failure);
  return record.exit_code;
}

int explain_command(const CommonOptions& common, const BuildCli& b, bool json_output,
                    const Environment& env, const Console& console) {
  Session session(session_options(common), env);
  console.warnings(session.warnings());
  const std::string warned_device = check_device_name(session, common, console);
  Explanation explanation = explain_build(session, make_request(common, b, env), run_options(b));
  say_notes(console, common.verbose, explanation.plan.notes, warned_device);
  if (json_output)
    std::cout << dump_json(explanation_json(explanation), 2) << "\n";
  else
    for (const std::string& line : explanation_lines(explanation)) std::cout << line << "\n";
  return 0;
}

int options_command(const CommonOptions& common, bool json_output, const Environment& env,
                    const Console& console) {
  Session session(session_options(common), env);
  console.warnings(session.warnings());
  const std::string warned_device = check_device_name(session, common, console);
  ProcessPlugins plugins = activate_plugins(
      session.registry, PluginRequest{common.plugins, common.device, common.backend},
      session.context());
  OptionsResult device = device_options_in_process(
      session.registry, plugins,
      DeviceQuery{common.device, common.aot, common.compile_only, common.backend},
      session.context(), common.strict);
  std::vector<std::string> notes = session.site.notes;
  notes.insert(notes.end(), plugins.notes.begin(), plugins.notes.end());
  notes.insert(notes.end(), device.notes.begin(), device.notes.end());
  say_notes(console, common.verbose, notes, warned_device);
  if (json_output) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (OptionList list : kAllOptionLists)
      out[std::string(list_name(list))] = device.options.values(list);
    std::cout << dump_json(out, 2) << "\n";
    return 0;
  }
  for (OptionList list : kAllOptionLists) {
    std::cout << list_name(list) << ":\n";
    for (const Entry& e : device.options.entries(list)) {
      std::cout << "  " << shell_quote(e.value) << "    # " << e.origin.provider;
      if (!e.origin.file.empty()) std::cout << " (" << e.origin.file_line() << ")";
      std::cout << "\n";
    }
  }
  return 0;
}

int devices_command(const CommonOptions& common, bool json_output, const Environment& env,
                    const Console& console) {
  Session session(session_options(common), env);
  console.warnings(session.warnings());
  auto devices = session.registry.list();
  if (json_output) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DeviceListing& d : devices) {
      nlohmann::ordered_json backends = nlohmann::ordered_json::array();
      for (const BackendInfo& bk : d.backends)
        backends.push_back({{"name", bk.name},
                            {"default", bk.is_default},
                            {"chain", bk.chain},
                            {"description", bk.description}});
      out.push_back({{"name", d.name},
                     {"kind", d.kind},
                     {"description", device_description(d)},
                     {"source", d.source},
                     {"mode", d.mode},
                     {"overrides", d.overridden},
                     {"backends", backends}});
    }
    std::cout << dump_json(out, 2) << "\n";
    return 0;
  }
  // A header, then one line per device: name, kind (mode), what it is, and
  // where it came from; its backends below it. Tab-separated for scripts.
  std::cout << "device\tkind\tdescription\tsource\n";
  for (const DeviceListing& d : devices) {
    std::cout << d.name << "\t" << d.kind;
    if (!d.mode.empty()) std::cout << " (" << d.mode << ")";
    std::cout << "\t" << device_description(d) << "\t" << d.source;
    for (const std::string& o : d.overridden) std::cout << "\t[overrides " << o << "]";
    std::cout << "\n";
    for (const BackendInfo& bk : d.backends) {
      std::cout << "  backend " << bk.name << (bk.is_default ? " (default)" : "") << ": device";
      for (const std::string& layer : bk.chain) std::cout << " -> " << layer;
      std::cout << "\n";
    }
  }
  return 0;
}

// Exit codes of `doctor`: the worst check.
constexpr int kDoctorWarn = 11, kDoctorFail = 12;

int doctor_command(const CommonOptions& common, bool json_output, const Environment& env,
                   const Console& console) {
  Site site = resolve_site(common.site, env);
  BuildCli none;  // doctor builds nothing: a request for the device and compiler only
  DoctorInput in{env,
                 site,
                 config_sources(data_dir(env), env, common.config_files),
                 make_request(common, none, env),
                 common.allow_untrusted_config,
                 common.site.torch_version};
  std::vector<DoctorCheck> checks = run_doctor(in);
  if (json_output) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DoctorCheck& c : checks)
      out.push_back({{"check", c.name},
                     {"status", status_name(c.status)},
                     {"detail", c.detail},
                     {"hint", c.hint}});
    std::cout << dump_json(out, 2) << "\n";
  } else {
    for (const DoctorCheck& c : checks) {
      const char* colour = c.status == CheckStatus::ok     ? Console::kGreen
                           : c.status == CheckStatus::warn ? Console::kMagenta
                                                           : Console::kRed;
      std::cout << console.paint(colour, status_name(c.status)) << "\t" << c.name << "\t"
                << c.detail << "\n";
      if (c.status != CheckStatus::ok && !c.hint.empty())
        std::cout << "\t\thint: " << c.hint << "\n";
    }
    std::cout << doctor_summary(checks) << "\n";
  }
  switch (worst(checks)) {
    case CheckStatus::ok: return 0;
    case CheckStatus::warn: return kDoctorWarn;
    case CheckStatus::fail: return kDoctorFail;
  }
  return kDoctorFail;
}

// `kbuild isa [--json]`: Inductor's valid ISAs and pick, and what for.
int isa_command(const CommandLine& cl, const Environment& env, const Console& console) {
  IsaAnswerRequest request{cl.common.site, compiler_of(cl.common, env), cl.build.remote_cache,
                           cl.build.remote_cache_readonly};
  IsaAnswer answer = isa_answer(request, env);
  console.warnings(answer.warnings);
  say_notes(console, cl.common.verbose, answer.notes);
  if (cl.json) {
    std::cout << dump_json(answer.json, 2) << "\n";
    return 0;
  }
  for (const std::string& line : isa_answer_lines(answer.json)) std::cout << line << "\n";
  return 0;
}

// Exit code of `build-many` when any build failed.
constexpr int kBatchFailed = 13;

// build-many's table: the status column as wide as its longest entry; with
// a baseline, each build's result before and how it moved, then a line per
// kind of move.
void print_batch_table(const std::vector<BatchSummaryRow>& rows,
                       const std::vector<BatchComparison>* comparisons) {
  auto status_of = [](const BatchSummaryRow& r) {
    return r.status != "failed" ? r.status
                                : r.stage + " (exit " + std::to_string(r.exit_code) + ")";
  };
  std::size_t width = std::string("status").size(), before_width = std::string("before").size();
  for (const BatchSummaryRow& r : rows) width = std::max(width, status_of(r).size());
  if (comparisons)
    for (const BatchComparison& c : *comparisons)
      before_width = std::max(before_width, c.before.size());
  const int w = static_cast<int>(width), bw = static_cast<int>(before_width);
  if (comparisons)
    std::printf("%-*s %8s  %-*s  %-11s  %s\n", w, "status", "seconds", bw, "before", "change",
                "build");
  else
    std::printf("%-*s %8s  %s\n", w, "status", "seconds", "build");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const BatchSummaryRow& r = rows[i];
    if (comparisons) {
      const BatchComparison& c = (*comparisons)[i];
      std::printf("%-*s %8.2f  %-*s  %-11s  %s\n", w, status_of(r).c_str(), r.seconds, bw,
                  c.before.empty() ? "-" : c.before.c_str(), migration_name(c.migration),
                  r.name.c_str());
    } else {
      std::printf("%-*s %8.2f  %s\n", w, status_of(r).c_str(), r.seconds, r.name.c_str());
    }
  }
  if (!comparisons) return;
  for (Migration m : {Migration::fixed, Migration::deeper, Migration::new_failure,
                      Migration::shallower, Migration::changed, Migration::added,
                      Migration::removed, Migration::skipped, Migration::unchanged}) {
    std::vector<std::string> names;
    for (const BatchComparison& c : *comparisons)
      if (c.migration == m)
        names.push_back(
            c.name + (m == Migration::unchanged || m == Migration::added || m == Migration::skipped
                          ? ""
                          : " (" + (c.before.empty() ? "-" : c.before) + " -> " +
                                (c.now.empty() ? "-" : c.now) + ")"));
    if (names.empty()) continue;
    std::string line = std::string(migration_name(m)) + ": " + std::to_string(names.size());
    for (std::size_t i = 0; i < names.size() && i < 20; ++i) line += (i ? ", " : " ") + names[i];
    if (names.size() > 20) line += ", ...";
    std::printf("%s\n", line.c_str());
  }
}

int build_many_command(const CommandLine& cl) {
  std::vector<BatchJob> batch = load_batch_manifest(cl.manifest);
  // Read before anything runs: a wrong baseline costs no build.
  std::optional<std::vector<BatchSummaryRow>> baseline;
  if (!cl.baseline.empty()) {
    check_comparable(batch);
    baseline = load_batch_baseline(cl.baseline);
  }
  if (cl.fail_on == "regressions" && !baseline)
    throw Error(ErrorKind::usage,
                "--fail-on regressions compares with a baseline: give --baseline PREVIOUS.json "
                "(the --json summary of an earlier run)");
  const bool tty = isatty(STDERR_FILENO);
  auto progress = [&](const BatchProgress& p) {
    if (!tty) return;
    double eta = p.done ? p.elapsed / p.done * (p.total - p.done) : 0;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %zu failed, %.0fs elapsed, ETA %.0fs", p.done, p.total,
                 p.failed, p.elapsed, eta);
    if (p.done == p.total) std::fprintf(stderr, "\r\033[K");
  };
  unsigned parallel = cl.jobs ? cl.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<BatchResult> results =
      run_batch(batch, {kbuild_program()}, parallel, cl.fail_fast, progress);
  if (tty) std::fprintf(stderr, "\r\033[K");
  for (const BatchResult& r : results)
    if (r.started && r.exit_code != 0) {
      const char* stage = stage_of_exit_code(r.exit_code);
      std::cerr << "== " << r.name << " (" << (*stage ? stage : "failed") << ", exit "
                << r.exit_code << "):\n"
                << r.output;
    }
  const std::vector<BatchSummaryRow> rows = summarize_batch(batch, results);
  std::optional<std::vector<BatchComparison>> comparisons;
  if (baseline) comparisons = compare_to_baseline(rows, *baseline);
  const std::vector<BatchComparison>* compared = comparisons ? &*comparisons : nullptr;
  if (cl.json) {
    std::cout << dump_json(batch_summary_json(rows, parallel, compared), 2) << "\n";
  } else {
    print_batch_table(rows, compared);
    const auto count = [&](const char* status) {
      return std::count_if(rows.begin(), rows.end(),
                           [&](const BatchSummaryRow& r) { return r.status == status; });
    };
    std::printf("%td built, %td failed, %td skipped, -j %u\n", count("ok"), count("failed"),
                count("skipped"), parallel);
  }
  if (cl.fail_on == "regressions") return regressed(*comparisons) ? kBatchFailed : 0;
  const bool any_failed = std::any_of(rows.begin(), rows.end(),
                                      [](const BatchSummaryRow& r) { return r.status != "ok"; });
  return any_failed ? kBatchFailed : 0;
}

int cache_command(const std::string& action, const std::string& max_size, bool json_output,
                  const Environment& env) {
  if (!max_size.empty() && action != "stats")  // never a setting silently ignored
    throw Error(ErrorKind::usage,
                "--cache-max-size is for kbuild cache stats (and builds), not " + action);
  if (json_output && action != "stats")
    throw Error(ErrorKind::usage, "--json is for kbuild cache stats, not " + action);
  if (action == "keygen") {
    SigningKeys keys = generate_signing_keys();
    std::cout << "KBUILD_REMOTE_CACHE_SIGNING_KEY=" << keys.secret_hex << "  # writers only\n"
              << "KBUILD_REMOTE_CACHE_VERIFY_KEY=" << keys.public_hex << "\n";
    return 0;
  }
  if (action == "stats") {
    const CacheSummary summary = cache_summary(env, max_size);
    if (json_output)
      std::cout << dump_json(cache_summary_json(summary), 2) << "\n";
    else
      for (const std::string& line : cache_summary_lines(summary)) std::cout << line << "\n";
    return 0;
  }
  const std::string root = cache_root(env);
  if (root.empty()) throw Error(ErrorKind::usage, kNoCacheRoot);
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    std::cout << "nothing to clear: " << root << "\n";
    return 0;
  }
  Result<TrustedDir> dir = open_cache_root(root, false);
  if (!dir) throw Error(ErrorKind::usage, dir.why());
  if (Status cleared = clear_cache(*dir); !cleared) throw Error(ErrorKind::usage, cleared.why());
  std::cout << "cleared " << root << "\n";
  return 0;
}

int run_command(int argc, char** argv, const Environment& env) {
  CommandLine cl;
  if (auto code = kbuild::cli::compiler_mode(argc, argv, env)) return *code;  // kbuild cc, g++
  const bool no_color = env.get_nonempty("NO_COLOR").has_value();
  if (auto answered = parse_command_line(
          argc, argv,
          [&env] { return std::string("kbuild ") + KBUILD_VERSION + "\n" + version_details(env); },
          Console(false, false, no_color), cl))
    return *answered;

  Console console(cl.common.quiet, cl.common.verbose, no_color);
  try {
    if (cl.command == "options") return options_command(cl.common, cl.json, env, console);
    if (cl.command == "devices") return devices_command(cl.common, cl.json, env, console);
    if (cl.command == "doctor") return doctor_command(cl.common, cl.json, env, console);
    if (cl.command == "isa") return isa_command(cl, env, console);
    if (cl.command == "cache")
      return cache_command(cl.cache_action, cl.build.cache_max_size, cl.json, env);
    if (cl.command == "build-many") return build_many_command(cl);
    if (cl.command == "explain") return explain_command(cl.common, cl.build, cl.json, env, console);
    if (auto misplaced = misplaced_subcommand(cl)) throw Error(ErrorKind::usage, *misplaced);
    return build_command(cl.common, cl.build, env, console,
                         std::vector<std::string>(argv, argv + argc));
  } catch (const Error& e) {
    console.error(e);
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    console.error("internal", std::string(e.what()) + " (please report this)");
    return exit_code(ErrorKind::internal);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Environment env = Environment::from_process();
  return run_command(argc, argv, env);
}
