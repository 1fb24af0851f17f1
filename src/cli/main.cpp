// The kbuild command line: parses arguments (CLI11), calls the library, owns
// all printing and the exit code.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "command_line.hpp"
#include "console.hpp"
#include "kbuild/batch.hpp"
#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/build_steps.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/compile_commands.hpp"
#include "kbuild/config_search.hpp"
#include "kbuild/doctor.hpp"
#include "kbuild/error.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/launcher.hpp"
#include "kbuild/load_check.hpp"
#include "kbuild/pch.hpp"
#include "kbuild/remote_cache.hpp"
#include "kbuild/remote_pch.hpp"
#include "kbuild/report.hpp"
#include "kbuild/shell.hpp"
#include "kbuild/signing.hpp"
#include "kbuild/site.hpp"
#include "kbuild_config.h"

namespace fs = std::filesystem;
using namespace kbuild;
using kbuild::cli::BuildCli;
using kbuild::cli::CommandLine;
using kbuild::cli::CommonOptions;
using kbuild::cli::Console;

namespace {

std::string data_dir(const Environment& env) {
  if (auto dir = env.get_nonempty("KBUILD_DATA_DIR")) return *dir;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "kbuild";
    if (fs::is_directory(installed / "devices", ec)) return installed.string();
    // Running from the build tree: use the source tree's configs.
    if (fs::is_directory(exe.parent_path().parent_path() / "meson-info", ec))
      return KBUILD_SOURCE_DATA_DIR;
  }
  return KBUILD_INSTALLED_DATA_DIR;
}

// kbuild-load-check: beside kbuild (the build tree), else in the libexec
// dir of the installation kbuild belongs to.
std::string load_check_helper() {
  std::error_code ec;
  fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const fs::path& candidate :
       {exe_dir / "kbuild-load-check", exe_dir.parent_path() / "libexec" / "kbuild-load-check",
        fs::path(KBUILD_INSTALLED_LIBEXEC_DIR) / "kbuild-load-check"})
    if (!ec && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  throw Error(ErrorKind::internal,
              "kbuild-load-check (the --check-load helper) is missing beside " + exe_dir.string() +
                  " and in " + KBUILD_INSTALLED_LIBEXEC_DIR + "; reinstall kbuild");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Paths, device registry and timings of one run.
struct Session {
  const Environment& env;
  Site site;
  Registry registry;
  LoadedConfigs configs;
  std::vector<StageTiming> timings;

  Session(const CommonOptions& o, const Environment& e, const Console& console) : env(e) {
    auto start = std::chrono::steady_clock::now();
    site = resolve_site(o.site, env);
    configs = register_device_files(config_sources(data_dir(env), env, o.config_files), registry,
                                    o.allow_untrusted_config);
    timings.push_back({"config", seconds_since(start)});
    console.warnings(configs.warnings);
    console.warnings(registry.warnings());
  }
  ResolveContext context() const { return ResolveContext{site.paths, env}; }
};

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

// "500M", "4G", "1048576" -> bytes; nullopt when malformed.
std::optional<std::uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty()  ? 1
                 : unit == "K" ? 1024.0
                 : unit == "M" ? 1024.0 * 1024
                 : unit == "G" ? 1024.0 * 1024 * 1024
                               : -1;
  if (scale < 0 || value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(value * scale);
}

CacheSettings cache_settings(const Environment& env, bool enabled, const std::string& max_size) {
  CacheSettings s;
  s.root = cache_root(env);
  s.enabled = enabled;
  std::string size =
      !max_size.empty() ? max_size : env.get_nonempty("KBUILD_CACHE_MAX_SIZE").value_or("");
  if (!size.empty()) {
    auto bytes = parse_size(size);
    if (!bytes)
      throw Error(ErrorKind::usage, "cache size '" + size + "' is not a size like 500M or 4G");
    s.max_bytes = *bytes;
  }
  return s;
}

std::string compiler_version(const std::string& compiler, const Environment& env) {
  auto path = find_executable(compiler, env);
  if (!path) return "";
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(20);
  try {
    ProcessResult r = run_process({*path, "--version"}, opts);
    return r.out.substr(0, r.out.find('\n'));
  } catch (const Error&) {
    return "";
  }
}

// The steps' entries in the compilation database (each compile step, or
// the one command), exactly as a dry run or a build plans them.
void record_compile_commands(const std::string& database, const std::vector<Step>& steps,
                             const BuildRequest& request, const BuildPlan& plan) {
  for (const Step& step : steps) {
    if (step.kind != StepKind::command || (step.links && step.source.empty() && steps.size() > 1))
      continue;  // a split build's link compiles nothing
    std::vector<std::string> sources =
        step.source.empty() ? request.sources : std::vector<std::string>{step.source};
    std::string err = update_compile_commands(database, fs::current_path().string(), step.argv,
                                              sources, step.argv[step.output_index]);
    if (!err.empty()) throw Error(ErrorKind::output, "--compile-commands: " + err);
  }
  (void)plan;
}

int build_command(const CommonOptions& common, const BuildCli& b, const Environment& env,
                  const Console& console, const std::vector<std::string>& kbuild_argv) {
  std::optional<Session> session;
  std::optional<BuildRequest> request;
  std::optional<BuildPlan> plan;
  std::vector<Step> steps;
  BuildOutcome outcome;
  std::optional<Error> failure;
  std::vector<StageTiming> timings;
  std::optional<RemoteCache> remote;
  try {
    session.emplace(common, env, console);
    request = make_request(common, b, env);
    if (auto warning = aten_capability_warning(env)) console.warnings({*warning});
    // Every setting first: the PCH step runs with them too. A dry run
    // writes nothing, so it makes no cache directory.
    OutputCache cache =
        OutputCache::open(cache_settings(env, !b.no_cache, b.cache_max_size), !b.dry_run);
    if (!cache.problem().empty()) {
      if (cache.problem_is_warning())
        console.warnings({cache.problem()});
      else
        console.notes({cache.problem()});
    }
    BuildSettings settings;
    settings.cache = &cache;
    if (!b.no_cache && !b.dry_run)
      settings.remote =
          &remote.emplace(remote_cache_settings(b.remote_cache, b.remote_cache_readonly, env));
    settings.launcher = parse_launcher(
        b.launcher.empty() ? session->registry.launcher_for(common.device) : b.launcher);
    settings.launcher.resolve_native = b.resolve_native;
    if (b.timeout_s > 0)
      settings.timeout = std::chrono::milliseconds(static_cast<long>(b.timeout_s * 1000));
    const bool load_check = b.check_load || !b.required_symbols.empty();
    if (load_check && !b.dry_run) settings.load_check.loader = {load_check_helper()};
    settings.load_check.required_symbols = b.required_symbols;
    std::vector<std::string> pch_steps;
    PchResult pch;  // holds a private .gch directory until the build ends
    if (!b.pch.empty()) {
      if (!b.include_pch.empty())
        throw Error(ErrorKind::usage, "--pch and --include-pch exclude each other");
      // --no-cache turns off the output cache; the .gch is still kept.
      const TrustedDir* pch_root = cache.root();
      std::optional<TrustedDir> own_root;
      if (!pch_root && b.no_cache) {
        Result<TrustedDir> root = open_cache_root(cache_root(env), !b.dry_run);
        if (root)
          pch_root = &own_root.emplace(std::move(*root));
        else if (!b.dry_run)
          console.warnings({root.why() + "; the precompiled header is built for this build only"});
      }
      // Where the run will keep it: the cache, also when a dry run has not
      // made that directory yet.
      std::string pch_dir = pch_root ? pch_root->path() : "";
      std::error_code ec;
      if (!pch_root && b.dry_run && !fs::exists(cache_root(env), ec)) pch_dir = cache_root(env);
      PchPlan pch_plan = plan_pch(*request, b.pch, session->registry, session->context(), pch_dir,
                                  pch_root, settings.launcher, env);
      pch_steps = pch_lines(pch_plan);
      request->include_pch = pch_plan.include;
      if (!b.dry_run) {
        std::optional<std::string> pch_remote;
        if (settings.remote && settings.remote->enabled() && pch_root)
          pch_remote = remote_pch_key(pch_plan, env, *pch_root);
        if (pch_remote && !pch_plan.reuse &&
            fetch_remote_pch(*settings.remote, pch_plan, *pch_remote, *pch_root))
          pch_plan = plan_pch(*request, b.pch, session->registry, session->context(), pch_dir,
                              pch_root, settings.launcher, env);  // now reused
        pch = run_pch(pch_plan, pch_root, settings, session->registry, session->context(), *request,
                      env);
        if (pch_remote && pch.built)
          store_remote_pch(*settings.remote, pch_plan, *pch_remote, *pch_root);
        if (pch_remote)
          if (auto parts = remote_pch_parts(pch_plan, *pch_remote, pch.include, *pch_root))
            settings.remote_parts = *parts;
        console.info(std::string("pch: ") + (pch.built ? "built " : "reused ") + pch.include +
                     ".gch");
        request->include_pch = pch.include;
        settings.key_extra.push_back("pch " + pch.identity);
      }
    }
    auto start = std::chrono::steady_clock::now();
    plan = plan_build(*request, session->registry, session->context());
    StepInput step_input;
    step_input.sources = request->sources;
    step_input.launcher = settings.launcher;
    step_input.record_inputs = !b.no_cache && !cache_root(env).empty();
    step_input.load_check = load_check;
    step_input.required_symbols = b.required_symbols;
    if (settings.launcher.resolve_native && settings.launcher.split) {
      auto compiler = find_executable(plan->command.argv[0], env);
      if (compiler) step_input.native_flags = resolve_native_flags(*compiler, env);
    }
    steps = plan_steps(*plan, step_input);
    session->timings.push_back({"resolve", seconds_since(start)});
    console.notes(session->site.notes);
    console.notes(plan->notes);
    if (settings.launcher.distributes && !b.resolve_native)
      console.notes({settings.launcher.name() +
                     " compiles -march=native only on this machine; add --resolve-native "
                     "to send the compile steps to other hosts"});
    if (!b.compile_commands.empty())
      record_compile_commands(b.compile_commands, steps, *request, *plan);
    if (b.dry_run) {
      std::size_t commands = 0;
      for (const Step& s : steps) commands += s.kind == StepKind::command;
      if (b.inductor_line && (commands != 1 || !pch_steps.empty() || steps.size() != 1))
        throw Error(ErrorKind::usage, "--inductor-line prints a one-step plan, and this one has " +
                                          std::to_string(steps.size() + pch_steps.size()) +
                                          " steps; drop --inductor-line to see them");
      if (b.inductor_line) {
        std::cout << plan->command.inductor_line << "\n";
      } else {
        for (const std::string& line : pch_steps) std::cout << line << "\n";
        for (const std::string& line : step_lines(steps)) std::cout << line << "\n";
      }
    } else {
      for (const std::string& line : step_lines(steps)) console.info("running: " + line);
      run_build(*plan, steps, request->sources, settings, env, outcome);
      console.info(std::string("cache: ") + cache_status_name(outcome.cache) +
                   (outcome.cache_detail.empty() ? "" : " (" + outcome.cache_detail + ")"));
      if (steps.size() > 1 || settings.launcher.argv.size())
        for (const auto& step : outcome.steps) console.info("ran: " + shell_join(step));
      for (const StageTiming& t : outcome.timings)
        console.info(t.stage + " took " + std::to_string(t.seconds) + " s");
    }
  } catch (const Error& e) {
    failure = e;
  }
  if (remote && !remote->warning().empty()) console.warnings({remote->warning()});
  int code = failure ? exit_code(failure->kind()) : 0;
  if (!b.report.empty()) {
    ReportInput in;
    in.kbuild_argv = kbuild_argv;
    in.cwd = fs::current_path().string();
    in.request = request ? &*request : nullptr;
    in.plan = plan ? &*plan : nullptr;
    in.outcome = &outcome;
    in.steps = step_lines(steps);
    in.compiler_path = request ? request->compiler : compiler_of(common, env);
    in.compiler_version = compiler_version(in.compiler_path, env);
    if (session) {
      in.config_files = session->configs.files;
      in.timings = session->timings;
      for (const DeviceListing& d : session->registry.list())
        if (d.name == common.device) in.provider_kind = d.kind, in.provider_source = d.source;
    }
    in.env = &env;
    in.error = failure ? &*failure : nullptr;
    in.exit_code = code;
    std::string err = write_file_atomically(b.report, build_report(in).dump(2) + "\n");
    if (!err.empty()) console.warnings({"--report: " + err});
  }
  if (failure) console.error(*failure);
  return code;
}

int explain_command(const CommonOptions& common, const BuildCli& b, const Environment& env,
                    const Console& console) {
  Session session(common, env, console);
  BuildRequest request = make_request(common, b, env);
  if (request.sources.empty()) request.sources = {"kernel.cpp"};
  BuildPlan plan = plan_build(request, session.registry, session.context());
  console.notes(plan.notes);
  StepInput step_input;
  step_input.sources = request.sources;
  step_input.launcher = parse_launcher(
      b.launcher.empty() ? session.registry.launcher_for(common.device) : b.launcher);
  step_input.record_inputs = !b.no_cache && !cache_root(env).empty();
  step_input.load_check = b.check_load || !b.required_symbols.empty();
  step_input.required_symbols = b.required_symbols;
  for (const std::string& line : step_lines(plan_steps(plan, step_input)))
    std::cout << line << "\n";
  std::cout << "\n";
  auto where = [](const Origin& o) {
    std::string s = std::string(layer_name(o.layer)) + "  " + o.provider;
    if (!o.file.empty()) s += "  " + o.file + ":" + std::to_string(o.line);
    return s;
  };
  for (OptionList list : kAllOptionLists) {
    if (!links(plan.kind) && (list == OptionList::ldflags || list == OptionList::libraries ||
                              list == OptionList::libraries_dirs))
      continue;  // not on the command line
    for (const Entry& e : plan.options.entries(list)) {
      std::string words = shell_join(render_entry(list, e));
      if (words.empty()) continue;
      std::cout << words << std::string(words.size() < 48 ? 48 - words.size() : 1, ' ')
                << where(e.origin) << "\n";
    }
  }
  if (!plan.options.dropped().empty()) std::cout << "\ndropped:\n";
  for (const DroppedEntry& d : plan.options.dropped()) {
    std::string words = shell_join(render_entry(d.list, d.entry));
    std::cout << "  " << (words.empty() ? "''" : words) << "    " << where(d.entry.origin) << "  ("
              << d.reason << ")\n";
  }
  return 0;
}

int options_command(const CommonOptions& common, bool json_output, const Environment& env,
                    const Console& console) {
  Session session(common, env, console);
  OptionsResult device = session.registry.resolve(
      DeviceQuery{common.device, common.aot, common.compile_only, common.backend},
      session.context(), common.strict);
  console.notes(session.site.notes);
  console.notes(device.notes);
  if (json_output) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (OptionList list : kAllOptionLists)
      out[std::string(list_name(list))] = device.options.values(list);
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (OptionList list : kAllOptionLists) {
    std::cout << list_name(list) << ":\n";
    for (const Entry& e : device.options.entries(list)) {
      std::cout << "  " << shell_quote(e.value) << "    # " << e.origin.provider;
      if (!e.origin.file.empty()) std::cout << " (" << e.origin.file << ":" << e.origin.line << ")";
      std::cout << "\n";
    }
  }
  return 0;
}

int devices_command(const CommonOptions& common, bool json_output, const Environment& env,
                    const Console& console) {
  Session session(common, env, console);
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
                     {"source", d.source},
                     {"mode", d.mode},
                     {"overrides", d.overridden},
                     {"backends", backends}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const DeviceListing& d : devices) {
    std::cout << d.name << "\t" << d.kind;
    if (!d.mode.empty()) std::cout << " (" << d.mode << ")";
    std::cout << "\t" << d.source;
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
                   const Console&) {
  Site site = resolve_site(common.site, env);
  BuildCli none;
  DoctorInput in{env, site, config_sources(data_dir(env), env, common.config_files),
                 make_request(common, none, env), common.allow_untrusted_config};
  std::vector<DoctorCheck> checks = run_doctor(in);
  if (json_output) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DoctorCheck& c : checks)
      out.push_back({{"check", c.name},
                     {"status", status_name(c.status)},
                     {"detail", c.detail},
                     {"hint", c.hint}});
    std::cout << out.dump(2) << "\n";
  } else {
    for (const DoctorCheck& c : checks) {
      std::cout << status_name(c.status) << "\t" << c.name << "\t" << c.detail << "\n";
      if (c.status != CheckStatus::ok && !c.hint.empty())
        std::cout << "\t\thint: " << c.hint << "\n";
    }
  }
  switch (worst(checks)) {
    case CheckStatus::ok: return 0;
    case CheckStatus::warn: return kDoctorWarn;
    case CheckStatus::fail: return kDoctorFail;
  }
  return kDoctorFail;
}

// Exit code of `build-many` when any build failed.
constexpr int kBatchFailed = 13;

int build_many_command(const std::string& manifest, unsigned jobs, bool fail_fast) {
  std::vector<BatchJob> batch = load_batch_manifest(manifest);
  const bool tty = isatty(STDERR_FILENO);
  auto progress = [&](const BatchProgress& p) {
    if (!tty) return;
    double eta = p.done ? p.elapsed / p.done * (p.total - p.done) : 0;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %zu failed, %.0fs elapsed, ETA %.0fs", p.done, p.total,
                 p.failed, p.elapsed, eta);
    if (p.done == p.total) std::fprintf(stderr, "\r\033[K");
  };
  unsigned parallel = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<BatchResult> results =
      run_batch(batch, {"/proc/self/exe"}, parallel, fail_fast, progress);
  if (tty) std::fprintf(stderr, "\r\033[K");
  std::size_t failed = 0, skipped = 0;
  for (const BatchResult& r : results) {
    if (!r.started) {
      ++skipped;
      continue;
    }
    if (r.exit_code != 0) {
      ++failed;
      std::cerr << "== " << r.name << " (exit " << r.exit_code << "):\n" << r.output;
    }
  }
  std::printf("%-8s %8s  %s\n", "status", "seconds", "build");
  for (const BatchResult& r : results)
    std::printf("%-8s %8.2f  %s\n",
                !r.started         ? "skipped"
                : r.exit_code == 0 ? "ok"
                                   : ("exit " + std::to_string(r.exit_code)).c_str(),
                r.seconds, r.name.c_str());
  std::printf("%zu built, %zu failed, %zu skipped, -j %u\n", results.size() - failed - skipped,
              failed, skipped, parallel);
  return failed || skipped ? kBatchFailed : 0;
}

int cache_command(const std::string& action, const Environment& env) {
  if (action == "keygen") {
    SigningKeys keys = generate_signing_keys();
    std::cout << "KBUILD_REMOTE_CACHE_SIGNING_KEY=" << keys.secret_hex << "  # writers only\n"
              << "KBUILD_REMOTE_CACHE_VERIFY_KEY=" << keys.public_hex << "\n";
    return 0;
  }
  const std::string root = cache_root(env);
  if (root.empty()) throw Error(ErrorKind::usage, kNoCacheRoot);
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    std::cout << (action == "clear" ? "nothing to clear: " : "no cache yet at ") << root << "\n";
    return 0;
  }
  Result<TrustedDir> dir = open_cache_root(root, false);
  if (!dir) throw Error(ErrorKind::usage, dir.why());
  if (action == "clear") {
    if (Status cleared = clear_cache(*dir); !cleared) throw Error(ErrorKind::usage, cleared.why());
    std::cout << "cleared " << root << "\n";
    return 0;
  }
  CacheStats st = OutputCache::open(cache_settings(env, true, "")).stats();
  std::cout << "cache directory  " << root << "\n"
            << "entries          " << st.entries << "\n"
            << "size             " << st.bytes << " bytes\n"
            << "hits             " << st.hits << "\n"
            << "misses           " << st.misses << "\n";
  RemoteStats remote = remote_stats(*dir);
  std::cout << "remote hits      " << remote.hits << "\n"
            << "remote misses    " << remote.misses << "\n"
            << "remote errors    " << remote.errors << "\n"
            << "remote down      " << remote.bytes_down << " bytes\n"
            << "remote up        " << remote.bytes_up << " bytes\n";
  return 0;
}

std::string version_text(const Environment& env) {
  std::string text = std::string("kbuild ") + KBUILD_VERSION + "\ndevice files are read from:";
  for (const ConfigSource& s : config_sources(data_dir(env), env, {})) text += "\n  " + s.path;
  text += "\n  then each --config FILE";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const Environment env = Environment::from_process();
  const bool no_color = env.get_nonempty("NO_COLOR").has_value();
  CommandLine cl;
  if (auto answered = parse_command_line(
          argc, argv, [&env] { return version_text(env); }, Console(false, false, no_color), cl))
    return *answered;

  Console console(cl.common.quiet, cl.common.verbose, no_color);
  try {
    if (cl.command == "options") return options_command(cl.common, cl.json, env, console);
    if (cl.command == "devices") return devices_command(cl.common, cl.json, env, console);
    if (cl.command == "doctor") return doctor_command(cl.common, cl.json, env, console);
    if (cl.command == "cache") return cache_command(cl.cache_action, env);
    if (cl.command == "build-many") return build_many_command(cl.manifest, cl.jobs, cl.fail_fast);
    if (cl.command == "explain") return explain_command(cl.common, cl.build, env, console);
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
