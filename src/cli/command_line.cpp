#include "command_line.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "build/session.hpp"
#include "devices/device_file.hpp"
#include "diagnose/report.hpp"
#include "kbuild/error.hpp"
#include "site/isa.hpp"
#include "util/file_system.hpp"
#include "util/text.hpp"

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
// What `kbuild cache ACTION` does (the shell completions list the same).
const std::vector<std::string> kCacheActions = {"stats", "clear", "keygen", "check"};
// At most a week: a longer --timeout is a mistake (or inf, which would
// overflow the deadline and end the compiler at once).
constexpr double kMaxTimeoutSeconds = 604800;
const CLI::Validator kSeconds(
    [](const std::string& value) {
      double seconds = 0;
      return CLI::detail::lexical_cast(value, seconds) && std::isfinite(seconds) && seconds > 0 &&
                     seconds <= kMaxTimeoutSeconds
                 ? std::string()
                 : "'" + value + "' is not a number of seconds in (0, 604800]";
    },
    "SECONDS");
// The values of --fail-on and --baseline-missing (the completions offer the
// same: value_kind below).
const std::vector<std::string> kFailOnValues = {"failures", "regressions"};
const std::vector<std::string> kBaselineMissingValues = {"error", "empty"};
// A validator taking one of two `values`: "'x' is not A or B".
CLI::Validator one_of_two(const std::vector<std::string>& values) {
  return CLI::Validator(
      [values](const std::string& value) {
        return std::find(values.begin(), values.end(), value) != values.end()
                   ? std::string()
                   : "'" + value + "' is not " + values[0] + " or " + values[1];
      },
      values[0] + "|" + values[1]);
}
const CLI::Validator kFailOn = one_of_two(kFailOnValues);
const CLI::Validator kBaselineMissing = one_of_two(kBaselineMissingValues);
constexpr unsigned long kMaxJobs = 1024;
const CLI::Validator kJobs(
    [](const std::string& value) {
      unsigned long jobs = 0;
      bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      return digits && CLI::detail::lexical_cast(value, jobs) && jobs <= kMaxJobs
                 ? std::string()
                 : "'" + value + "' is not a number of builds from 1 to 1024 (0: one per core)";
    },
    "JOBS");

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

// The command line's option table: adds the options `filter` wants to `app`.
class OptionTable {
 public:
  OptionTable(CLI::App& app, const OptionFilter& filter) : app_(app), filter_(filter) {}
  template <typename T>
  void option(const std::string& names, T& target, const std::string& help,
              const CLI::Validator* check = nullptr) {
    if (!filter_.wants(names)) return;
    CLI::Option* o = app_.add_option(names, target, help);
    if (check) o->check(*check);
  }
  // Repeatable, one value each time (-I a -I b).
  // `value`: the word --help shows for the value (as the man page names it).
  void list(const std::string& names, std::vector<std::string>& target, const std::string& help,
            const std::string& value = "") {
    if (!filter_.wants(names)) return;
    CLI::Option* o = app_.add_option(names, target, help)->allow_extra_args(false);
    if (!value.empty()) o->type_name(value);
  }
  void flag(const std::string& names, bool& target, const std::string& help) {
    if (filter_.wants(names)) app_.add_flag(names, target, help);
  }
  // A flag that may take a value: `--name` alone sets `target` to "true",
  // `--name=VALUE` to VALUE, which must be one of `values`.
  void flag_value(const std::string& names, std::string& target,
                  const std::vector<std::string>& values, const std::string& help) {
    if (!filter_.wants(names)) return;
    std::string shown;
    for (const std::string& v : values) shown += (shown.empty() ? "=" : "|") + v;
    CLI::Validator one_of(
        [values, shown](std::string& given) -> std::string {
          if (given == "true" || std::find(values.begin(), values.end(), given) != values.end())
            return "";
          return "takes no value, or " + shown + ", not '" + given + "'";
        },
        "");
    app_.add_flag(names, target, help)->check(one_of)->type_name("[" + shown + "]");
  }

 private:
  CLI::App& app_;
  const OptionFilter& filter_;
};

// Which device, backend and mode: builds, explain, options and doctor.
void add_device(OptionTable app, CommandLine& o) {
  app.option("--device", o.device, "device type (cpu, cuda, xpu, mps, or a registered one)",
             &kDeviceName);
  app.option("--backend", o.backend,
             "the device's backend (npu: triton, mlir, dvm, ascendc); default: the file's "
             "default_backend");
  app.list("--plugin", o.plugins,
           "a package loaded into the process (repeatable): apply its device file's plugin "
           "section, e.g. torch_npu's patches for cpu kernels (--device npu implies npu)",
           "DEVICE");
  app.flag("--aot", o.aot, "AOT mode (no torch_python)");
  app.flag("-c,--compile-only", o.compile_only, "compile to an object (-c), do not link");
  app.flag("--strict", o.strict, "an unknown device is an error");
}

// Where device files, torch, Python and CUDA are: every command.
void add_site(OptionTable app, CommandLine& o) {
  app.list("--device-file,--config", o.device_files,
           "device file to register (repeatable; last wins; --config is the older name)");
  app.flag("--allow-untrusted-device-files,--allow-untrusted-config",
           o.allow_untrusted_device_files,
           "load device files and exec programs others could have written (world-writable, or "
           "owned by another user)");
  app.option("--torch-root", o.site.torch_root,
             "torch package dir (default: KBUILD_TORCH_ROOT, else found via python3)");
  app.option("--torch-npu-root", o.site.torch_npu_root,
             "torch_npu package dir (default: KBUILD_TORCH_NPU_ROOT, else beside torch)");
  app.flag("--no-torch", o.site.no_torch, "no torch layer: plain C++ kernels");
  app.option("--torch-version", o.site.torch_version,
             "torch X.Y[.Z] whose Inductor profile to use (default: the found torch's version.py, "
             "else 2.11)");
  app.option("--python", o.site.python, "Python interpreter used for discovery (default python3)");
  app.option("--python-include", o.site.python_include, "Python include dir");
  app.option("--python-libdir", o.site.python_libdir, "Python LIBDIR");
  app.option("--cuda-home", o.site.cuda_home,
             "CUDA root (default: CUDA_HOME, CUDA_PATH, nvcc's prefix, /usr/local/cuda)");
}

// The compiler: builds, explain and doctor.
void add_compiler(OptionTable app, CommandLine& o) {
  app.option("--cxx", o.cxx, "C++ compiler (default: CXX, else g++)");
}

// The vector ISA: builds and explain.
void add_isa(OptionTable app, CommandLine& o) {
  app.option("--isa", o.isa,
             "vector ISA: auto (the running CPU's best whose probes build and load, as Inductor "
             "picks) or exactly none|avx2|avx512|avx512_vnni|amx|neon|sve256, with +bf16/+fp16 "
             "extras");
}

void add_voice(OptionTable app, CommandLine& o) {
  app.flag("-q,--quiet", o.quiet, "no notes or warnings (errors still)");
  app.flag("-v,--verbose", o.verbose, "say what runs and how long it took; list every note");
}

// Everything a build (and explain) understands besides its own options.
void add_common(OptionTable app, CommandLine& o) {
  add_device(app, o);
  add_site(app, o);
  add_compiler(app, o);
  add_isa(app, o);
  add_voice(app, o);
}

void add_build(OptionTable app, CommandLine& b) {
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

// Sharing through Redis: builds and `isa`.
void add_remote_cache(OptionTable app, CommandLine& b) {
  app.option("--remote-cache", b.remote_cache,
             "share the output cache through Redis (redis://HOST:PORT[/DB] or unix:///PATH) or "
             "HTTP (http(s)://HOST[:PORT]/PATH) (default: KBUILD_REMOTE_CACHE)");
  app.flag("--remote-cache-readonly", b.remote_cache_readonly,
           "use the remote cache's entries, never write to it");
}

// What only a build (no subcommand) does.
void add_build_only(OptionTable app, CommandLine& b) {
  app.flag("--dry-run", b.dry_run,
           "print the compiler command instead of running it (with --isa auto, a first run "
           "may build the ISA probes: it writes only their cache)");
  app.flag("--inductor-line", b.inductor_line,
           "with --dry-run: print Inductor's exact command string");
  app.flag_value("--check-load", b.check_load, {"strict"},
                 "open the built library (RTLD_NOW, in a child process) before it replaces the "
                 "output; =strict: with this process's environment only (exit 7 when it needs "
                 "the link's library dirs on LD_LIBRARY_PATH)");
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
  add_remote_cache(app, b);
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
    {"isa", "Inductor's valid vector ISAs and its pick here (the probes --isa auto runs)"},
    {"build-many", "build every kernel of a build list (BUILDS.json), N at a time"},
    {"cache",
     "output cache: stats, clear, keygen (a signing key pair for the remote cache), or check "
     "(the remote cache's address, checked as a routed compile checks it)"},
    // Only listed: `kbuild cc -- ARGV` is taken before parsing (cc_command.hpp).
    {"cc", "run a compiler command as given through the cache: kbuild cc -- g++ ARGS..."},
};

// Registers what `chosen` (a subcommand, or "" for a build) accepts; the
// other subcommands only by name, and only for --help.
void define(CLI::App& app, const std::string& chosen, const OptionFilter& filter, bool help,
            CommandLine& out) {
  if (chosen.empty()) {
    add_common(OptionTable(app, filter), out);
    add_build(OptionTable(app, filter), out);
    add_build_only(OptionTable(app, filter), out);
  }
  for (const Subcommand& s : kSubcommands) {
    if (chosen != s.name && !help) continue;
    CLI::App* sub = app.add_subcommand(s.name, s.description);
    if (chosen != s.name) continue;
    OptionTable options(*sub, filter);
    if (chosen == "explain") add_common(options, out);
    if (chosen == "options" || chosen == "doctor") add_device(options, out);
    const bool lists = chosen == "options" || chosen == "devices" || chosen == "doctor";
    if (lists || chosen == "isa") {
      add_site(options, out);
      add_voice(options, out);
    }
    if (chosen == "doctor" || chosen == "isa") add_compiler(options, out);
    if (chosen == "explain") add_build(options, out);
    if (lists || chosen == "isa") options.flag("--json", out.json, "as JSON");
    if (chosen == "explain")
      options.flag("--json", out.json,
                   "as JSON: the command's argv, its steps, each flag with its list, layer, "
                   "provider, file and line, and what was dropped");
    if (chosen == "isa") add_remote_cache(options, out);
    if (chosen == "build-many") {
      sub->add_option("BUILDS.json", out.build_list,
                      "JSON: {\"common\": [args], \"builds\": [[args], ...]}")
          ->required();
      options.option("-j,--jobs", out.jobs, "builds at a time (default: the number of cores)",
                     &kJobs);
      options.flag("--fail-fast", out.fail_fast, "start nothing new after a failure");
      options.flag("--json", out.json,
                   "print the summary as JSON (each build's status, stage, seconds, report)");
      options.option("--baseline", out.baseline,
                     "compare with an earlier run's --json summary: per build fixed, new "
                     "failure, unchanged, deeper or shallower stage");
      options.option("--baseline-missing", out.baseline_missing,
                     "what a --baseline file that does not exist means: error (default) or "
                     "empty (the first night: every build is added or a new failure, with a "
                     "note)",
                     &kBaselineMissing);
      options.option("--fail-on", out.fail_on,
                     "exit 13 on: failures (default: any build failed) or regressions (new "
                     "failures and shallower stages against --baseline)",
                     &kFailOn);
    }
    if (chosen == "cache")
      options.option("--cache-max-size", out.cache_max_size,
                     "(stats) the limit to show, e.g. 500M (default: KBUILD_CACHE_MAX_SIZE, "
                     "else 4G)");
    if (chosen == "cache")
      options.flag("--json", out.json, "(stats) as JSON: entries, bytes, limit and counters");
    if (chosen == "cache")
      options.option("--remote-cache", out.remote_cache,
                     "(check) the address to check (default: KBUILD_REMOTE_CACHE)");
    if (chosen == "cache")
      sub->add_option("action", out.cache_action, "stats | clear | keygen | check")
          ->required()
          ->check(CLI::IsMember(kCacheActions));
  }
  app.require_subcommand(0, 1);
}

// The usage line says what kbuild accepts: a subcommand first, or a build.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    if (app->get_parent()) return CLI::Formatter::make_usage(app, name);
    return "Usage: kbuild [OPTIONS] SOURCES... [-o OUTPUT]       (a build)\n"
           "       kbuild SUBCOMMAND [OPTIONS]                  (the subcommand comes first)\n"
           "       kbuild SUBCOMMAND --help                     (its options)\n";
  }
};

// The option names `app` (or its chosen subcommand) accepts: "--device", "-c".
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  return names;
}

const CLI::App& chosen_app(const CLI::App& app, const std::string& chosen) {
  return chosen.empty() ? app : *app.get_subcommand(chosen);
}

// " did you mean --device?" for each option-like word of argv that `app`
// does not know but a known one is one typo away from.
std::string option_suggestions(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names = option_names(app);
  std::string said;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") break;
    if (word.rfind("--", 0) != 0) continue;
    word = word.substr(0, word.find('='));
    if (std::find(names.begin(), names.end(), word) != names.end()) continue;
    if (auto match = closest_match(word, names)) said += "; did you mean " + *match + "?";
  }
  return said;
}

// "kbuild cache stat": the action named, one typo from a known one or not.
std::string unknown_cache_action(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    const std::string before = argv[i - 1];
    if (word.empty() || word[0] == '-' || before == "--cache-max-size") continue;
    if (std::find(kCacheActions.begin(), kCacheActions.end(), word) != kCacheActions.end())
      continue;
    auto match = closest_match(word, kCacheActions);
    return "unknown cache action '" + word + "'" +
           (match ? "; did you mean 'kbuild cache " + *match + "'?" : "") +
           " (actions: " + comma_joined(kCacheActions) + ")";
  }
  return "";
}

// What a parse error says, with the help kbuild can add.
std::string usage_message(const CLI::ParseError& e, const CLI::App& app, const std::string& chosen,
                          int argc, char** argv) {
  if (chosen == "cache" && dynamic_cast<const CLI::RequiredError*>(&e))
    return "kbuild cache needs an action: kbuild cache stats, or kbuild cache clear";
  if (chosen == "cache" && dynamic_cast<const CLI::ValidationError*>(&e))
    if (std::string unknown = unknown_cache_action(argc, argv); !unknown.empty()) return unknown;
  std::string message = e.what() + option_suggestions(chosen_app(app, chosen), argc, argv);
  return message + " (see kbuild " + (chosen.empty() ? "" : chosen + " ") + "--help)";
}

// What the value of an option (or a positional: "sources", "BUILDS.json",
// "action") is, for the shell completions: "words" and the words to offer,
// "device" or "backend" (the shell asks `kbuild devices`), "file", "dir", or
// "text" (anything: nothing to offer).
std::vector<std::string> value_kind(const std::string& name) {
  const auto words = [](std::vector<std::string> values) {
    values.insert(values.begin(), "words");
    return values;
  };
  if (name == "--device" || name == "--plugin") return {"device"};
  if (name == "--backend") return {"backend"};
  if (name == "--isa") {
    std::vector<std::string> isas{"auto"};
    for (IsaKind kind : {IsaKind::none, IsaKind::avx2, IsaKind::avx512, IsaKind::avx512_vnni,
                         IsaKind::amx, IsaKind::neon, IsaKind::sve256})
      isas.emplace_back(isa_name(kind));
    return words(isas);
  }
  if (name == "--baseline-missing") return words(kBaselineMissingValues);
  if (name == "--fail-on") return words(kFailOnValues);
  if (name == "--launcher") return words({"ccache", "sccache", "distcc", "icecc"});
  if (name == "action") return words(kCacheActions);
  for (const char* file :
       {"sources", "BUILDS.json", "-o", "--output", "--device-file", "--config", "--baseline",
        "--report", "--compile-commands", "--include-pch", "--pch"})
    if (name == file) return {"file"};
  for (const char* dir : {"-I", "-L", "--torch-root", "--torch-npu-root", "--python-include",
                          "--python-libdir", "--cuda-home"})
    if (name == dir) return {"dir"};
  return {"text"};
}

// `kbuild --completion-words [SUBCOMMAND]`: the words the shell completions
// (bash, zsh, fish) offer, from the same option table that parses, so they
// cannot differ. `kbuild --completion-values [SUBCOMMAND]`: a line for each
// option and positional that takes a value, "NAME KIND [WORDS...]"
// (value_kind).
int print_completion_words(const std::string& chosen, bool values) {
  CommandLine unused;
  CLI::App app;
  char program[] = "kbuild";
  char* no_argv[] = {program};
  define(app, chosen, OptionFilter(1, no_argv, true), false, unused);
  if (values) {
    for (const CLI::Option* o : chosen_app(app, chosen).get_options()) {
      if (o->get_expected_max() == 0) continue;  // a flag
      std::vector<std::string> names;
      if (o->get_positional()) names.push_back(o->get_name());
      for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
      for (const std::string& n : o->get_snames()) names.push_back("-" + n);
      for (const std::string& name : names) {
        std::cout << name;
        for (const std::string& word : value_kind(name)) std::cout << " " << word;
        std::cout << "\n";
      }
    }
    return 0;
  }
  if (chosen.empty())
    for (const Subcommand& s : kSubcommands) std::cout << s.name << "\n";
  for (const std::string& name : option_names(chosen_app(app, chosen))) std::cout << name << "\n";
  std::cout << "--help\n";
  if (chosen.empty()) std::cout << "--version\n";
  return 0;
}

}  // namespace

std::vector<std::string> subcommand_names() {
  std::vector<std::string> names;
  for (const Subcommand& s : kSubcommands) names.push_back(s.name);
  return names;
}

std::optional<int> parse_command_line(int argc, char** argv,
                                      const std::function<std::string()>& version_text,
                                      const Console& console, CommandLine& out) {
  // A subcommand comes first; only its options are registered.
  std::string chosen = argc > 1 ? argv[1] : "";
  bool known = false;
  for (const Subcommand& s : kSubcommands) known = known || chosen == s.name;
  if (chosen == "--completion-words" || chosen == "--completion-values") {
    std::string sub = argc > 2 ? argv[2] : "";
    const bool values = chosen == "--completion-values";
    for (const Subcommand& s : kSubcommands)
      if (sub == s.name) return print_completion_words(sub, values);
    return print_completion_words("", values);
  }
  if (!known) chosen.clear();
  bool help = false, version = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    help = help || arg == "-h" || arg == "--help" || arg == "--help-all";
    version = version || arg == "--version";
    json = json || arg == "--json";
  }
  // --version prints text only: never a --json silently dropped.
  if (version && json && !help) {
    console.error("usage",
                  "--version has no JSON form; kbuild doctor --json gives the same facts (the "
                  "compiler, torch, device files, the profile) as JSON");
    return exit_code(ErrorKind::usage);
  }
  // First with the options the command line names, then (after an error)
  // with all of them, so that what is said is what CLI11 says of the full set.
  for (bool everything : {help, true}) {
    CommandLine parsed;
    CLI::App app{
        "kbuild: compile machine-generated kernels with the exact flags PyTorch Inductor uses"};
    app.formatter(std::make_shared<UsageFormatter>());
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
      console.error("usage", usage_message(e, app, chosen, argc, argv));
      return exit_code(ErrorKind::usage);
    }
  }
  return exit_code(ErrorKind::internal);  // not reached: the second pass returns
}

namespace {

std::string subcommand_too_late(const std::string& name) {
  return "'" + name + "' is a subcommand, and subcommands come first: kbuild " + name +
         " [OPTIONS] (no source named " + name + " exists)";
}

std::string subcommand_mistyped(const std::string& source, const std::string& name) {
  return "no source named '" + source + "'; did you mean the subcommand '" + name +
         "'? (subcommands come first: kbuild " + name + " [OPTIONS])";
}

}  // namespace

std::optional<std::string> misplaced_subcommand(const CommandLine& cl) {
  if (!cl.command.empty()) return std::nullopt;
  std::vector<std::string> names = subcommand_names();
  for (const std::string& source : cl.sources) {
    std::error_code ec;
    if (std::filesystem::exists(source, ec)) continue;
    if (std::find(names.begin(), names.end(), source) != names.end())
      return subcommand_too_late(source);
    if (source.find('.') != std::string::npos || source.find('/') != std::string::npos) continue;
    if (auto match = closest_match(source, names)) return subcommand_mistyped(source, *match);
  }
  return std::nullopt;
}

std::string compiler_of(const CommandLine& cl, const Environment& env) {
  if (!cl.cxx.empty()) return cl.cxx;
  return env.get_nonempty("CXX").value_or("g++");
}

OutputKind output_kind(const CommandLine& cl) {
  return cl.precompile     ? OutputKind::precompiled_header
         : cl.preprocess   ? OutputKind::preprocessed
         : cl.compile_only ? OutputKind::object
                           : OutputKind::shared_library;
}

BuildRequest make_request(const CommandLine& cl, const Environment& env) {
  if (cl.precompile + cl.preprocess + cl.compile_only > 1)
    throw Error(ErrorKind::usage,
                "--compile-only, --precompile and --preprocess exclude each other");
  if (cl.inductor_line && !cl.dry_run)
    throw Error(ErrorKind::usage,
                "--inductor-line prints Inductor's command string, which only --dry-run prints: "
                "add --dry-run (a build prints no command)");
  BuildRequest r;
  r.query = DeviceQuery{cl.device, cl.aot, cl.compile_only, cl.backend};
  r.plugins = cl.plugins;
  r.kind = output_kind(cl);
  r.sources = cl.sources;
  r.output = cl.output;
  r.compiler = compiler_of(cl, env);
  r.machine = machine_name();
  r.strict = cl.strict;
  r.min_optimize = cl.min_optimize;
  r.debug = cl.debug;
  r.warning_all = !cl.no_warning_all;
  r.use_torch = !cl.site.no_torch;
  // "auto" is picked from the CPU only if the plan needs an ISA.
  auto isa = cl.isa == "auto" ? std::nullopt : parse_isa(cl.isa, CpuFeatures{}, env);
  if (cl.isa != "auto" && !isa)
    throw Error(ErrorKind::usage, "unknown --isa '" + cl.isa +
                                      "' (auto, none, avx2, avx512, avx512_vnni, amx, neon, "
                                      "sve256, with optional +bf16/+fp16)");
  r.isa = isa;
  r.extra_flags = cl.extra_flags;
  if (!cl.include_pch.empty()) r.include_pch = cl.include_pch;
  r.include_dirs = cl.includes;
  r.definitions = cl.definitions;
  r.libraries_dirs = cl.lib_dirs;
  r.libraries = cl.libs;
  // How to run it: cache, launcher, timeout, load check, --pch, the remote cache.
  r.use_cache = !cl.no_cache;
  r.cache_max_size = cl.cache_max_size;
  r.dry_run = cl.dry_run;
  r.launcher = cl.launcher;
  r.resolve_native = cl.resolve_native;
  r.timeout_s = cl.timeout_s;
  r.load_check = !cl.check_load.empty() || !cl.required_symbols.empty();
  r.load_check_strict = cl.check_load == "strict";
  r.required_symbols = cl.required_symbols;
  r.pch = cl.pch;
  r.remote_cache = cl.remote_cache;
  r.remote_cache_readonly = cl.remote_cache_readonly;
  r.compile_commands = cl.compile_commands;
  r.verbose = cl.verbose;
  return r;
}

// Where the report would go is checked before anything runs.
Status report_target_problem(const CommandLine& cl) {
  if (cl.report.empty()) return ok();
  std::string output = !cl.output.empty()   ? cl.output
                       : cl.sources.empty() ? ""
                                            : default_output(cl.sources.front(), output_kind(cl));
  return report_path_problem(cl.report, cl.sources, output);
}

}  // namespace kbuild::cli
