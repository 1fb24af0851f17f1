// The kbuild command line: parses arguments (CLI11), calls the library, owns
// all printing and the exit code.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kbuild/build_plan.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/config_search.hpp"
#include "kbuild/error.hpp"
#include "kbuild/shell.hpp"
#include "kbuild/site.hpp"
#include "kbuild_config.h"

namespace fs = std::filesystem;
using namespace kbuild;

namespace {

// Options every subcommand understands (discovery, configuration, device).
struct CommonOptions {
  SiteSettings site;
  std::vector<std::string> config_files;
  std::string device = "cpu";
  std::string backend;
  bool aot = false;
  bool compile_only = false;
  bool strict = false;
  std::string cxx;
  std::string isa = "auto";
};

struct BuildOptionsCli {
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
};

void add_common(CLI::App& app, CommonOptions& o) {
  app.add_option("--device", o.device, "device type (cpu, cuda, xpu, mps, or a registered one)");
  app.add_option("--backend", o.backend,
                 "the device's backend (npu: triton, mlir, dvm, ascendc); default: the file's "
                 "default_backend");
  app.add_flag("--aot", o.aot, "AOT mode (no torch_python)");
  app.add_flag("-c,--compile-only", o.compile_only, "compile to an object (-c), do not link");
  app.add_flag("--strict", o.strict, "an unknown device is an error");
  app.add_option("--config", o.config_files, "device file to register (repeatable; last wins)")
      ->allow_extra_args(false);
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
                 "CUDA root (default: CUDA_HOME, else /usr/local/cuda)");
  app.add_option("--cxx", o.cxx, "C++ compiler (default: CXX, else g++)");
  app.add_option("--isa", o.isa,
                 "vector ISA: auto (the running CPU's best, as Inductor picks) or exactly "
                 "none|avx2|avx512|avx512_vnni|amx|neon|sve256, with +bf16/+fp16 extras");
}

std::string data_dir(const Environment& env) {
  if (auto dir = env.get_nonempty("KBUILD_DATA_DIR")) return *dir;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "kbuild";
    if (fs::is_directory(installed / "devices", ec)) return installed.string();
    // Running from the build tree: use the source tree's configs.
    if (fs::is_directory(exe.parent_path().parent_path() / "meson-info", ec) ||
        fs::is_directory(exe.parent_path() / "meson-info", ec))
      return KBUILD_SOURCE_DATA_DIR;
  }
  return KBUILD_INSTALLED_DATA_DIR;
}

void print_notes(const std::string& kind, const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::cerr << "kbuild: " << kind << ": " << line << "\n";
}

// Everything a subcommand needs: paths, registry, environment.
struct Session {
  Environment env = Environment::from_process();
  Site site;
  Registry registry;
  std::vector<std::string> notes;

  explicit Session(const CommonOptions& o) {
    site = resolve_site(o.site, env);
    notes = site.notes;
    LoadedConfigs loaded =
        register_device_files(config_sources(data_dir(env), env, o.config_files), registry);
    print_notes("warning", loaded.warnings);
    print_notes("warning", registry.warnings());
  }
  ResolveContext context() const { return ResolveContext{site.paths, env}; }
};

std::string compiler_of(const CommonOptions& o, const Environment& env) {
  if (!o.cxx.empty()) return o.cxx;
  return env.get_nonempty("CXX").value_or("g++");
}

int run_build_command(const CommonOptions& common, const BuildOptionsCli& b) {
  if (b.precompile + b.preprocess + common.compile_only > 1)
    throw Error(ErrorKind::usage,
                "--compile-only, --precompile and --preprocess exclude each other");
  Session session(common);
  CpuFeatures cpu = read_cpu_features();

  BuildRequest r;
  r.query = DeviceQuery{common.device, common.aot, common.compile_only, common.backend};
  r.kind = b.precompile          ? OutputKind::precompiled_header
           : b.preprocess        ? OutputKind::preprocessed
           : common.compile_only ? OutputKind::object
                                 : OutputKind::shared_library;
  r.sources = b.sources;
  r.output = b.output;
  r.compiler = compiler_of(common, session.env);
  r.machine = cpu.machine;
  r.strict = common.strict;
  r.min_optimize = b.min_optimize;
  r.debug = b.debug;
  r.warning_all = !b.no_warning_all;
  r.use_torch = !common.site.no_torch;
  auto isa = parse_isa(common.isa, cpu, session.env);
  if (!isa)
    throw Error(ErrorKind::usage, "unknown --isa '" + common.isa +
                                      "' (auto, none, avx2, avx512, avx512_vnni, amx, neon, "
                                      "sve256, with optional +bf16/+fp16)");
  r.isa = *isa;
  r.extra_flags = b.extra_flags;
  if (!b.include_pch.empty()) r.include_pch = b.include_pch;
  r.include_dirs = b.includes;
  r.definitions = b.definitions;
  r.libraries_dirs = b.lib_dirs;
  r.libraries = b.libs;

  BuildPlan plan = plan_build(r, session.registry, session.context());
  print_notes("note", session.notes);
  print_notes("note", plan.notes);
  if (b.dry_run) {
    std::cout << (b.inductor_line ? plan.command.inductor_line : shell_join(plan.command.argv))
              << "\n";
    return 0;
  }
  run_build(plan, r.sources, session.env);
  return 0;
}

int run_options_command(const CommonOptions& common, bool json_output) {
  Session session(common);
  OptionsResult device = session.registry.resolve(
      DeviceQuery{common.device, common.aot, common.compile_only, common.backend},
      session.context(), common.strict);
  print_notes("note", session.notes);
  print_notes("note", device.notes);
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

int run_devices_command(const CommonOptions& common, bool json_output) {
  Session session(common);
  auto devices = session.registry.list();
  if (json_output) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DeviceListing& d : devices) {
      nlohmann::ordered_json backends = nlohmann::ordered_json::array();
      for (const BackendInfo& b : d.backends)
        backends.push_back({{"name", b.name},
                            {"default", b.is_default},
                            {"chain", b.chain},
                            {"description", b.description}});
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
    for (const BackendInfo& b : d.backends) {
      std::cout << "  backend " << b.name << (b.is_default ? " (default)" : "") << ": device";
      for (const std::string& layer : b.chain) std::cout << " -> " << layer;
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kbuild: compile machine-generated kernels with the exact flags PyTorch Inductor uses"};
  app.set_version_flag("--version", std::string("kbuild ") + KBUILD_VERSION);
  CommonOptions common;
  BuildOptionsCli b;
  add_common(app, common);
  app.add_option("sources", b.sources, "sources (or objects to link)");
  app.add_option("-o,--output", b.output, "output file (default: from the first source)");
  app.add_flag("--dry-run", b.dry_run, "print the compiler command instead of running it");
  app.add_flag("--inductor-line", b.inductor_line,
               "with --dry-run: print Inductor's exact command string");
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

  CommonOptions options_common;
  bool options_json = false;
  CLI::App* options_cmd = app.add_subcommand(
      "options", "print the device layer's 7 lists (the upstream hook's result)");
  add_common(*options_cmd, options_common);
  options_cmd->add_flag("--json", options_json, "as a JSON object with the 7 keys");

  CommonOptions devices_common;
  bool devices_json = false;
  CLI::App* devices_cmd =
      app.add_subcommand("devices", "list registered devices and where they came from");
  add_common(*devices_cmd, devices_common);
  devices_cmd->add_flag("--json", devices_json, "as JSON");
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kbuild: error[usage]: " << e.what() << " (see kbuild --help)\n";
    return exit_code(ErrorKind::usage);
  }

  try {
    if (*options_cmd) return run_options_command(options_common, options_json);
    if (*devices_cmd) return run_devices_command(devices_common, devices_json);
    return run_build_command(common, b);
  } catch (const Error& e) {
    std::cerr << "kbuild: error[" << stage_name(e.kind()) << "]: " << e.what() << "\n";
    if (!e.detail().empty()) std::cerr << e.detail() << (e.detail().back() == '\n' ? "" : "\n");
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "kbuild: error[internal]: " << e.what() << " (please report this)\n";
    return exit_code(ErrorKind::internal);
  }
}
