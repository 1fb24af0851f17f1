#include "command_line.hpp"

#include <CLI/CLI.hpp>
#include <string_view>

#include "kbuild/device_file.hpp"
#include "kbuild/error.hpp"

namespace kbuild::cli {
namespace {

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

// Which options a command line can be using. CLI11 compares each new option
// with every earlier one, so registering all ~50 of kbuild's cost more than
// the rest of a dry run; a command line names a few. The test is generous
// (a short option counts when its letter appears in any "-xyz" word), and a
// command line that fails to parse is parsed again with every option, so the
// filter changes how fast kbuild starts, never what it accepts or says.
class OptionFilter {
 public:
  OptionFilter(int argc, char** argv, bool everything) : everything_(everything) {
    for (int i = 1; i < argc; ++i) {
      std::string_view word = argv[i];
      if (word == "--") break;  // the rest are sources
      if (word.size() > 2 && word.substr(0, 2) == "--")
        long_words_.push_back(word.substr(0, word.find('=')));
      else if (word.size() > 1 && word[0] == '-')
        short_letters_.append(word.substr(1));
    }
  }
  // `names` as CLI11 takes them: "-c,--compile-only"; a positional is always
  // wanted.
  bool wants(std::string_view names) const {
    if (everything_) return true;
    while (!names.empty()) {
      std::string_view name = names.substr(0, names.find(','));
      names.remove_prefix(std::min(names.size(), name.size() + 1));
      if (name.substr(0, 2) == "--") {
        for (std::string_view w : long_words_)
          if (w == name) return true;
      } else if (name.size() == 2 && name[0] == '-') {
        if (short_letters_.find(name[1]) != std::string::npos) return true;
      } else {
        return true;
      }
    }
    return false;
  }

 private:
  bool everything_;
  std::vector<std::string_view> long_words_;
  std::string short_letters_;
};

// Adds the options `filter` wants to `app`.
class Options {
 public:
  Options(CLI::App& app, const OptionFilter& filter) : app_(app), filter_(filter) {}
  template <typename T>
  void option(const std::string& names, T& target, const std::string& help,
              const CLI::Validator* check = nullptr) {
    if (!filter_.wants(names)) return;
    CLI::Option* o = app_.add_option(names, target, help);
    if (check) o->check(*check);
  }
  // Repeatable, one value each time (-I a -I b).
  void list(const std::string& names, std::vector<std::string>& target, const std::string& help) {
    if (filter_.wants(names)) app_.add_option(names, target, help)->allow_extra_args(false);
  }
  void flag(const std::string& names, bool& target, const std::string& help) {
    if (filter_.wants(names)) app_.add_flag(names, target, help);
  }

 private:
  CLI::App& app_;
  const OptionFilter& filter_;
};

void add_common(Options app, CommonOptions& o) {
  app.option("--device", o.device, "device type (cpu, cuda, xpu, mps, or a registered one)",
             &kDeviceName);
  app.option("--backend", o.backend,
             "the device's backend (npu: triton, mlir, dvm, ascendc); default: the file's "
             "default_backend");
  app.flag("--aot", o.aot, "AOT mode (no torch_python)");
  app.flag("-c,--compile-only", o.compile_only, "compile to an object (-c), do not link");
  app.flag("--strict", o.strict, "an unknown device is an error");
  app.list("--config", o.config_files, "device file to register (repeatable; last wins)");
  app.flag("--allow-untrusted-config", o.allow_untrusted_config,
           "load device files and exec programs others could have written (world-writable, or "
           "owned by another user)");
  app.option("--torch-root", o.site.torch_root,
             "torch package dir (default: KBUILD_TORCH_ROOT, else found via python3)");
  app.option("--torch-npu-root", o.site.torch_npu_root,
             "torch_npu package dir (default: KBUILD_TORCH_NPU_ROOT, else beside torch)");
  app.flag("--no-torch", o.site.no_torch, "no torch layer: plain C++ kernels");
  app.option("--python", o.site.python, "Python interpreter used for discovery (default python3)");
  app.option("--python-include", o.site.python_include, "Python include dir");
  app.option("--python-libdir", o.site.python_libdir, "Python LIBDIR");
  app.option("--cuda-home", o.site.cuda_home,
             "CUDA root (default: CUDA_HOME, CUDA_PATH, nvcc's prefix, /usr/local/cuda)");
  app.option("--cxx", o.cxx, "C++ compiler (default: CXX, else g++)");
  app.option("--isa", o.isa,
             "vector ISA: auto (the running CPU's best, as Inductor picks) or exactly "
             "none|avx2|avx512|avx512_vnni|amx|neon|sve256, with +bf16/+fp16 extras");
  app.flag("-q,--quiet", o.quiet, "no notes or warnings (errors still)");
  app.flag("-v,--verbose", o.verbose, "say what runs and how long it took");
}

void add_build(Options app, BuildCli& b) {
  app.option("sources", b.sources, "sources (or objects to link)");
  app.option("-o,--output", b.output, "output file (default: from the first source)", &kNotEmpty);
  app.flag("--precompile", b.precompile, "precompile a header to .gch (-x c++-header)");
  app.flag("--preprocess", b.preprocess, "preprocess to .i (-E -P)");
  app.flag("--min-optimize", b.min_optimize, "-O1 instead of -O3 (Inductor's wrapper level)");
  app.flag("--debug", b.debug, "-O0 -g instead of -O3 -DNDEBUG");
  app.flag("--no-warning-all", b.no_warning_all, "no -Wall (as Inductor's ISA probe builds)");
  app.list("--extra-flags", b.extra_flags, "extra flags, one passthrough entry (repeatable)");
  app.option("--include-pch", b.include_pch, "-include this header (its .gch is used if present)");
  app.list("-I", b.includes, "include dir (user layer)");
  app.list("-D", b.definitions, "definition (user layer)");
  app.list("-L", b.lib_dirs, "library dir (user layer)");
  app.list("-l", b.libs, "library (user layer)");
}

// What only a build (no subcommand) does.
void add_build_only(Options app, BuildCli& b) {
  app.flag("--dry-run", b.dry_run, "print the compiler command instead of running it");
  app.flag("--inductor-line", b.inductor_line,
           "with --dry-run: print Inductor's exact command string");
  app.flag("--check-load", b.check_load,
           "open the built library (RTLD_NOW, in a child process) before it replaces the output");
  app.list("--require-symbol", b.required_symbols,
           "with the load check: this symbol must be defined (repeatable)");
  app.option("--report", b.report, "write an evidence report (JSON) on success and on failure");
  app.option("--compile-commands", b.compile_commands,
             "add this build to a compile_commands.json (clangd, clang-tidy)");
  app.flag("--no-cache", b.no_cache, "do not use the output cache for this build");
  app.flag("--resolve-native", b.resolve_native,
           "with --launcher: give the launched compile steps what -march=native means here "
           "(distcc/icecc compile -march=native only locally)");
  app.option("--timeout", b.timeout_s,
             "end the compiler (its whole process group) after this many seconds", &kSeconds);
  app.option("--pch", b.pch,
             "precompile this prefix header once (per content and flags) and -include it");
  app.option("--launcher", b.launcher,
             "put this before the compiler: ccache, sccache, distcc, icecc (compile steps "
             "through it, link locally) or any command");
  app.option("--cache-max-size", b.cache_max_size,
             "cache size limit, e.g. 500M or 4G (default: KBUILD_CACHE_MAX_SIZE, else 4G)");
  app.option("--remote-cache", b.remote_cache,
             "share the output cache through Redis: redis://HOST:PORT[/DB] or unix:///PATH "
             "(default: KBUILD_REMOTE_CACHE)");
  app.flag("--remote-cache-readonly", b.remote_cache_readonly,
           "use the remote cache's entries, never write to it");
}

struct Subcommand {
  const char* name;
  const char* description;
};
constexpr Subcommand kSubcommands[] = {
    {"options", "print the device layer's 7 lists (the upstream hook's result)"},
    {"devices", "list registered devices, their backends, and where they came from"},
    {"explain", "show every flag of the command with the layer, provider and file that added it"},
    {"doctor", "check compiler, device files, variables, paths and libraries"},
    {"build-many", "build every kernel of a manifest, N at a time"},
    {"cache", "output cache: stats, clear, or keygen (a signing key pair for the remote cache)"},
};

// Registers what `chosen` (a subcommand, or "" for a build) accepts; the
// other subcommands only by name, and only for --help.
void define(CLI::App& app, const std::string& chosen, const OptionFilter& filter, bool help,
            CommandLine& out) {
  if (chosen.empty()) {
    add_common(Options(app, filter), out.common);
    add_build(Options(app, filter), out.build);
    add_build_only(Options(app, filter), out.build);
  }
  for (const Subcommand& s : kSubcommands) {
    if (chosen != s.name && !help) continue;
    CLI::App* sub = app.add_subcommand(s.name, s.description);
    if (chosen != s.name) continue;
    Options options(*sub, filter);
    if (chosen == "options" || chosen == "devices" || chosen == "doctor" || chosen == "explain")
      add_common(options, out.common);
    if (chosen == "explain") add_build(options, out.build);
    if (chosen == "options" || chosen == "devices" || chosen == "doctor")
      options.flag("--json", out.json, "as JSON");
    if (chosen == "build-many") {
      sub->add_option("manifest", out.manifest,
                      "JSON: {\"common\": [args], \"builds\": [[args], ...]}")
          ->required();
      options.option("-j,--jobs", out.jobs, "builds at a time (default: the number of cores)");
      options.flag("--fail-fast", out.fail_fast, "start nothing new after a failure");
    }
    if (chosen == "cache")
      sub->add_option("action", out.cache_action, "stats | clear | keygen")
          ->required()
          ->check(CLI::IsMember({"stats", "clear", "keygen"}));
  }
  app.require_subcommand(0, 1);
}

}  // namespace

std::optional<int> parse_command_line(int argc, char** argv,
                                      const std::function<std::string()>& version_text,
                                      const Console& console, CommandLine& out) {
  // A subcommand comes first; only its options are registered.
  std::string chosen = argc > 1 ? argv[1] : "";
  bool known = false;
  for (const Subcommand& s : kSubcommands) known = known || chosen == s.name;
  if (!known) chosen.clear();
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    help = help || arg == "-h" || arg == "--help" || arg == "--help-all";
  }
  // First with the options the command line names, then (after an error)
  // with all of them, so that what is said is what CLI11 says of the full set.
  for (bool everything : {help, true}) {
    CommandLine parsed;
    CLI::App app{
        "kbuild: compile machine-generated kernels with the exact flags PyTorch Inductor uses"};
    app.set_version_flag("--version", version_text);
    define(app, chosen, OptionFilter(argc, argv, everything), help, parsed);
    try {
      app.parse(argc, argv);
      parsed.command = chosen;
      out = std::move(parsed);
      return std::nullopt;
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      if (!everything) continue;
      console.error("usage", std::string(e.what()) + " (see kbuild --help)");
      return exit_code(ErrorKind::usage);
    }
  }
  return exit_code(ErrorKind::internal);  // not reached: the second pass returns
}

}  // namespace kbuild::cli
