// The kbuild command line: parses arguments (CLI11), calls the library, owns
// all printing and the exit code.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "console.hpp"
#include "kbuild/batch.hpp"
#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/compile_commands.hpp"
#include "kbuild/config_search.hpp"
#include "kbuild/device_file.hpp"
#include "kbuild/doctor.hpp"
#include "kbuild/error.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/load_check.hpp"
#include "kbuild/pch.hpp"
#include "kbuild/report.hpp"
#include "kbuild/shell.hpp"
#include "kbuild/site.hpp"
#include "kbuild_config.h"

namespace fs = std::filesystem;
using namespace kbuild;
using kbuild::cli::Console;

namespace {

// Options every subcommand understands (discovery, configuration, device).
struct CommonOptions {
  SiteSettings site;
  std::vector<std::string> config_files;
  bool allow_untrusted_config = false;
  std::string device = "cpu";
  std::string backend;
  bool aot = false;
  bool compile_only = false;
  bool strict = false;
  std::string cxx;
  std::string isa = "auto";
  bool quiet = false;
  bool verbose = false;
};

// What a build (and `explain`) is asked to do.
struct BuildCli {
  std::vector<std::string> sources;
  std::string output;
  bool dry_run = false;
  bool inductor_line = false;
  bool precompile = false;
  bool preprocess = false;
  bool min_optimize = false;
  bool debug = false;
  bool no_warning_all = false;
  std::vector<std::string> extra_flags;
  std::string include_pch;
  std::vector<std::string> includes, definitions, lib_dirs, libs;
  bool check_load = false;
  std::vector<std::string> required_symbols;
  std::string report;
  std::string compile_commands;
  bool no_cache = false;
  std::string cache_max_size;
  std::string launcher;
  bool resolve_native = false;
  std::string pch;
  double timeout_s = 0;
};

// Values CLI11 would take but kbuild cannot use; said before anything runs.
const CLI::Validator kNotEmpty(
    [](const std::string& value) { return value.empty() ? "must not be empty" : std::string(); },
    "NOT EMPTY");
const CLI::Validator kDeviceName(
    [](const std::string& value) {
      return is_valid_device_name(value) ? std::string()
                                         : "'" + value +
                                               "' is not a device name (lowercase letters, "
                                               "digits, '_' and '-', starting with a letter)";
    },
    "DEVICE");
const CLI::Validator kSeconds(
    [](const std::string& value) {
      double seconds = 0;
      return CLI::detail::lexical_cast(value, seconds) && seconds > 0
                 ? std::string()
                 : "'" + value + "' is not a number of seconds above 0";
    },
    "SECONDS");

void add_common(CLI::App& app, CommonOptions& o) {
  app.add_option("--device", o.device, "device type (cpu, cuda, xpu, mps, or a registered one)")
      ->check(kDeviceName);
  app.add_option("--backend", o.backend,
                 "the device's backend (npu: triton, mlir, dvm, ascendc); default: the file's "
                 "default_backend");
  app.add_flag("--aot", o.aot, "AOT mode (no torch_python)");
  app.add_flag("-c,--compile-only", o.compile_only, "compile to an object (-c), do not link");
  app.add_flag("--strict", o.strict, "an unknown device is an error");
  app.add_option("--config", o.config_files, "device file to register (repeatable; last wins)")
      ->allow_extra_args(false);
  app.add_flag("--allow-untrusted-config", o.allow_untrusted_config,
               "load device files and exec programs others could have written (world-writable, "
               "or owned by another user)");
  app.add_option("--torch-root", o.site.torch_root,
                 "torch package dir (default: KBUILD_TORCH_ROOT, else found via python3)");
  app.add_option("--torch-npu-root", o.site.torch_npu_root,
                 "torch_npu package dir (default: KBUILD_TORCH_NPU_ROOT, else beside torch)");
  app.add_flag("--no-torch", o.site.no_torch, "no torch layer: plain C++ kernels");
  app.add_option("--python", o.site.python,
                 "Python interpreter used for discovery (default python3)");
  app.add_option("--python-include", o.site.python_include, "Python include dir");
  app.add_option("--python-libdir", o.site.python_libdir, "Python LIBDIR");
  app.add_option("--cuda-home", o.site.cuda_home,
                 "CUDA root (default: CUDA_HOME, CUDA_PATH, nvcc's prefix, /usr/local/cuda)");
  app.add_option("--cxx", o.cxx, "C++ compiler (default: CXX, else g++)");
  app.add_option("--isa", o.isa,
                 "vector ISA: auto (the running CPU's best, as Inductor picks) or exactly "
                 "none|avx2|avx512|avx512_vnni|amx|neon|sve256, with +bf16/+fp16 extras");
  app.add_flag("-q,--quiet", o.quiet, "no notes or warnings (errors still)");
  app.add_flag("-v,--verbose", o.verbose, "say what runs and how long it took");
}

void add_build(CLI::App& app, BuildCli& b) {
  app.add_option("sources", b.sources, "sources (or objects to link)");
  app.add_option("-o,--output", b.output, "output file (default: from the first source)")
      ->check(kNotEmpty);
  app.add_flag("--precompile", b.precompile, "precompile a header to .gch (-x c++-header)");
  app.add_flag("--preprocess", b.preprocess, "preprocess to .i (-E -P)");
  app.add_flag("--min-optimize", b.min_optimize, "-O1 instead of -O3 (Inductor's wrapper level)");
  app.add_flag("--debug", b.debug, "-O0 -g instead of -O3 -DNDEBUG");
  app.add_flag("--no-warning-all", b.no_warning_all, "no -Wall (as Inductor's ISA probe builds)");
  app.add_option("--extra-flags", b.extra_flags, "extra flags, one passthrough entry (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--include-pch", b.include_pch,
                 "-include this header (its .gch is used if present)");
  app.add_option("-I", b.includes, "include dir (user layer)")->allow_extra_args(false);
  app.add_option("-D", b.definitions, "definition (user layer)")->allow_extra_args(false);
  app.add_option("-L", b.lib_dirs, "library dir (user layer)")->allow_extra_args(false);
  app.add_option("-l", b.libs, "library (user layer)")->allow_extra_args(false);
}

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
  s.enabled = enabled && !s.root.empty();
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

int build_command(const CommonOptions& common, const BuildCli& b, const Environment& env,
                  const Console& console, const std::vector<std::string>& kbuild_argv) {
  std::optional<Session> session;
  std::optional<BuildRequest> request;
  std::optional<BuildPlan> plan;
  BuildOutcome outcome;
  std::optional<Error> failure;
  std::vector<StageTiming> timings;
  try {
    session.emplace(common, env, console);
    request = make_request(common, b, env);
    if (auto warning = aten_capability_warning(env)) console.warnings({*warning});
    if (!b.pch.empty()) {
      if (!b.include_pch.empty())
        throw Error(ErrorKind::usage, "--pch and --include-pch exclude each other");
      BuildSettings pch_settings;
      PchResult pch = prepare_pch(*request, b.pch, session->registry, session->context(),
                                  cache_root(env), pch_settings, env);
      console.info(std::string("pch: ") + (pch.built ? "built " : "reused ") + pch.include +
                   ".gch");
      request->include_pch = pch.include;
    }
    auto start = std::chrono::steady_clock::now();
    plan = plan_build(*request, session->registry, session->context());
    session->timings.push_back({"resolve", seconds_since(start)});
    console.notes(session->site.notes);
    console.notes(plan->notes);
    if (!b.compile_commands.empty()) {
      std::string err = update_compile_commands(b.compile_commands, fs::current_path().string(),
                                                plan->command.argv, request->sources, plan->output);
      if (!err.empty()) throw Error(ErrorKind::output, "--compile-commands: " + err);
    }
    if (b.dry_run) {
      std::cout << (b.inductor_line ? plan->command.inductor_line : shell_join(plan->command.argv))
                << "\n";
    } else {
      console.info("running: " + shell_join(plan->command.argv));
      OutputCache cache(cache_settings(env, !b.no_cache, b.cache_max_size));
      BuildSettings settings;
      settings.cache = &cache;
      settings.launcher = parse_launcher(
          b.launcher.empty() ? session->registry.launcher_for(common.device) : b.launcher);
      settings.launcher.resolve_native = b.resolve_native;
      if (b.timeout_s > 0)
        settings.timeout = std::chrono::milliseconds(static_cast<long>(b.timeout_s * 1000));
      std::string launcher_name = settings.launcher.argv.empty()
                                      ? ""
                                      : fs::path(settings.launcher.argv[0]).filename().string();
      if ((launcher_name == "distcc" || launcher_name == "icecc" || launcher_name == "pump") &&
          !b.resolve_native)
        console.notes({launcher_name +
                       " compiles -march=native only on this machine; add --resolve-native "
                       "to send the compile steps to other hosts"});
      settings.load_check.enabled = b.check_load || !b.required_symbols.empty();
      if (settings.load_check.enabled) settings.load_check.loader = {load_check_helper()};
      settings.load_check.required_symbols = b.required_symbols;
      run_build(*plan, request->sources, settings, env, outcome);
      console.info("cache: " + outcome.cache);
      for (const auto& step : outcome.steps) console.info("ran: " + shell_join(step));
      for (const StageTiming& t : outcome.timings)
        console.info(t.stage + " took " + std::to_string(t.seconds) + " s");
    }
  } catch (const Error& e) {
    failure = e;
  }
  int code = failure ? exit_code(failure->kind()) : 0;
  if (!b.report.empty()) {
    ReportInput in;
    in.kbuild_argv = kbuild_argv;
    in.cwd = fs::current_path().string();
    in.request = request ? &*request : nullptr;
    in.plan = plan ? &*plan : nullptr;
    in.outcome = &outcome;
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
  std::cout << shell_join(plan.command.argv) << "\n\n";
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
  OutputCache cache(cache_settings(env, true, ""));
  if (action == "clear") {
    cache.clear();
    std::cout << "cleared " << cache_root(env) << "\n";
    return 0;
  }
  CacheStats st = cache.stats();
  std::cout << "cache directory  " << cache_root(env) << "\n"
            << "entries          " << st.entries << "\n"
            << "size             " << st.bytes << " bytes\n"
            << "hits             " << st.hits << "\n"
            << "misses           " << st.misses << "\n";
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
  CLI::App app{
      "kbuild: compile machine-generated kernels with the exact flags PyTorch Inductor uses"};
  app.set_version_flag("--version", [&env] { return version_text(env); });
  CommonOptions common;
  BuildCli b;
  // Only the options of what runs are registered (CLI11's set-up is most of
  // kbuild's start-up time): a subcommand must come first.
  const std::string first = argc > 1 ? argv[1] : "";
  auto chosen = [&](const char* name) { return first == name; };
  const bool build_mode = !(chosen("options") || chosen("devices") || chosen("explain") ||
                            chosen("doctor") || chosen("build-many") || chosen("cache"));
  if (build_mode) {
    add_common(app, common);
    add_build(app, b);
    app.add_flag("--dry-run", b.dry_run, "print the compiler command instead of running it");
    app.add_flag("--inductor-line", b.inductor_line,
                 "with --dry-run: print Inductor's exact command string");
    app.add_flag(
        "--check-load", b.check_load,
        "open the built library (RTLD_NOW, in a child process) before it replaces the output");
    app.add_option("--require-symbol", b.required_symbols,
                   "with the load check: this symbol must be defined (repeatable)")
        ->allow_extra_args(false);
    app.add_option("--report", b.report,
                   "write an evidence report (JSON) on success and on failure");
    app.add_option("--compile-commands", b.compile_commands,
                   "add this build to a compile_commands.json (clangd, clang-tidy)");
    app.add_flag("--no-cache", b.no_cache, "do not use the output cache for this build");
    app.add_flag("--resolve-native", b.resolve_native,
                 "with --launcher: give the launched compile steps what -march=native means here "
                 "(distcc/icecc compile -march=native only locally)");
    app.add_option("--timeout", b.timeout_s,
                   "end the compiler (its whole process group) after this many seconds")
        ->check(kSeconds);
    app.add_option("--pch", b.pch,
                   "precompile this prefix header once (per content and flags) and -include it");
    app.add_option("--launcher", b.launcher,
                   "put this before the compiler: ccache, sccache, distcc, icecc (compile steps "
                   "through it, link locally) or any command");
    app.add_option("--cache-max-size", b.cache_max_size,
                   "cache size limit, e.g. 500M or 4G (default: KBUILD_CACHE_MAX_SIZE, else 4G)");
  }

  CommonOptions options_common, devices_common, doctor_common, explain_common;
  BuildCli explain_build;
  bool options_json = false, devices_json = false, doctor_json = false;
  // A plain build needs no subcommand objects; --help lists them.
  bool wants_help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    wants_help = wants_help || arg == "-h" || arg == "--help" || arg == "--help-all";
  }
  auto subcommand = [&](const char* name, const char* description) -> CLI::App* {
    return build_mode && !wants_help ? nullptr : app.add_subcommand(name, description);
  };
  auto ran = [](const CLI::App* cmd) { return cmd != nullptr && cmd->parsed(); };
  CLI::App* options_cmd =
      subcommand("options", "print the device layer's 7 lists (the upstream hook's result)");
  if (chosen("options")) {
    add_common(*options_cmd, options_common);
    options_cmd->add_flag("--json", options_json, "as a JSON object with the 7 keys");
  }
  CLI::App* devices_cmd =
      subcommand("devices", "list registered devices, their backends, and where they came from");
  if (chosen("devices")) {
    add_common(*devices_cmd, devices_common);
    devices_cmd->add_flag("--json", devices_json, "as JSON");
  }
  CLI::App* explain_cmd = subcommand(
      "explain", "show every flag of the command with the layer, provider and file that added it");
  if (chosen("explain")) {
    add_common(*explain_cmd, explain_common);
    add_build(*explain_cmd, explain_build);
  }
  CLI::App* doctor_cmd =
      subcommand("doctor", "check compiler, device files, variables, paths and libraries");
  if (chosen("doctor")) {
    add_common(*doctor_cmd, doctor_common);
    doctor_cmd->add_flag("--json", doctor_json, "as JSON");
  }
  std::string manifest;
  unsigned batch_jobs = 0;
  bool fail_fast = false;
  CLI::App* many_cmd = subcommand("build-many", "build every kernel of a manifest, N at a time");
  if (chosen("build-many")) {
    many_cmd
        ->add_option("manifest", manifest, "JSON: {\"common\": [args], \"builds\": [[args], ...]}")
        ->required();
    many_cmd->add_option("-j,--jobs", batch_jobs,
                         "builds at a time (default: the number of cores)");
    many_cmd->add_flag("--fail-fast", fail_fast, "start nothing new after a failure");
  }
  std::string cache_action;
  CLI::App* cache_cmd = subcommand("cache", "output cache: stats or clear");
  if (chosen("cache"))
    cache_cmd->add_option("action", cache_action, "stats | clear")
        ->required()
        ->check(CLI::IsMember({"stats", "clear"}));
  app.require_subcommand(0, 1);

  Console usage_console(false, false, env.get_nonempty("NO_COLOR").has_value());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    usage_console.error("usage", std::string(e.what()) + " (see kbuild --help)");
    return exit_code(ErrorKind::usage);
  }

  const CommonOptions& active = ran(options_cmd)   ? options_common
                                : ran(devices_cmd) ? devices_common
                                : ran(doctor_cmd)  ? doctor_common
                                : ran(explain_cmd) ? explain_common
                                                   : common;
  Console console(active.quiet, active.verbose, env.get_nonempty("NO_COLOR").has_value());
  try {
    if (ran(options_cmd)) return options_command(options_common, options_json, env, console);
    if (ran(devices_cmd)) return devices_command(devices_common, devices_json, env, console);
    if (ran(doctor_cmd)) return doctor_command(doctor_common, doctor_json, env, console);
    if (ran(cache_cmd)) return cache_command(cache_action, env);
    if (ran(many_cmd)) return build_many_command(manifest, batch_jobs, fail_fast);
    if (ran(explain_cmd)) return explain_command(explain_common, explain_build, env, console);
    return build_command(common, b, env, console, std::vector<std::string>(argv, argv + argc));
  } catch (const Error& e) {
    console.error(e);
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    console.error("internal", std::string(e.what()) + " (please report this)");
    return exit_code(ErrorKind::internal);
  }
}
