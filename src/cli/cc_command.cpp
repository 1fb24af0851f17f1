#include "cc_command.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "driver/driver.hpp"
#include "kbuild/error.hpp"
#include "plan/compiler_call.hpp"
#include "printing.hpp"
#include "run/input_manifest.hpp"
#include "util/json.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild::cli {

namespace {

constexpr std::array<std::string_view, 3> kMasqueradeNames{"g++", "c++", "clang++"};

bool masquerading(const std::string& name) {
  return std::find(kMasqueradeNames.begin(), kMasqueradeNames.end(), name) !=
         kMasqueradeNames.end();
}

bool is_kbuild_itself(const fs::path& candidate) {
  std::error_code ec;
  return fs::equivalent(candidate, "/proc/self/exe", ec);
}

// The variable that marks a compiler kbuild's compiler mode started (as
// ccache's does): a second level is a loop (two kbuild copies named g++ on
// PATH, a g++ wrapper that runs kbuild cc), refused instead of run forever.
constexpr const char* kRunningMarker = "KBUILD_CC_RUNNING";
// Where the bridge says which compiler a masquerade link stands for (the
// one torch._inductor.config.cpp.cxx names, not the first of its name on PATH).
constexpr const char* kCompilerVariable = "KBUILD_CC_COMPILER";

std::string this_kbuild() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "kbuild" : self.string();
}

std::string checked_path(const std::string& path, const std::string& from) {
  if (is_kbuild_itself(path))
    throw Error(ErrorKind::usage,
                "cc: " + from + path + " is kbuild itself; name the real compiler");
  if (access(path.c_str(), X_OK) != 0 || fs::is_directory(path))
    throw Error(ErrorKind::compiler_missing,
                "cc: compiler " + from + path + " not found or not executable; check the path");
  return path;
}

// The compiler `name` stands for: a path as it is; a name found on PATH,
// skipping kbuild itself (the link it was started through, as ccache does),
// or, for a masquerade link, KBUILD_CC_COMPILER when set.
std::string real_compiler(const std::string& name, bool masquerade, const Environment& env) {
  if (auto configured = masquerade ? env.get_nonempty(kCompilerVariable) : std::nullopt) {
    if (configured->empty() || (*configured)[0] != '/')
      throw Error(ErrorKind::usage, std::string("cc: ") + kCompilerVariable + "='" + *configured +
                                        "' is not an absolute path; name the compiler's path");
    return checked_path(*configured, std::string(kCompilerVariable) + "=");
  }
  if (name.find('/') != std::string::npos) return checked_path(name, "");
  std::string path = env.get("PATH").value_or("/usr/bin:/bin");
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t end = std::min(path.find(':', start), path.size());
    fs::path candidate = fs::path(end > start ? path.substr(start, end - start) : ".") / name;
    start = end + 1;
    if (access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate) &&
        !is_kbuild_itself(candidate))
      return candidate.string();
  }
  throw Error(ErrorKind::compiler_missing,
              "cc: compiler '" + name + "' not found on PATH (kbuild itself does not count); " +
                  "install it or name its path");
}

// The compiler command: after `cc` (and an optional `--`), or kbuild's own
// argv when it was started as a compiler. nullopt: not compiler mode.
std::optional<std::vector<std::string>> compiler_argv(int argc, char** argv) {
  if (argc < 1) return std::nullopt;
  std::string name = fs::path(argv[0]).filename().string();
  if (masquerading(name)) {
    std::vector<std::string> words(argv, argv + argc);
    words[0] = name;
    return words;
  }
  if (argc < 2 || std::string_view(argv[1]) != "cc") return std::nullopt;
  int first = argc > 2 && std::string_view(argv[2]) == "--" ? 3 : 2;
  return std::vector<std::string>(argv + first, argv + argc);
}

// kbuild's own options before `--` (`kbuild cc -v -- g++ ...`): -v and
// --verbose say what ran, as KBUILD_VERBOSE=1 does; they are taken off
// `words`. Any other is refused by name (never passed to the compiler).
bool take_cc_options(std::vector<std::string>& words) {
  auto dashes = std::find(words.begin(), words.end(), std::string("--"));
  if (dashes == words.end() || words.empty() || words[0].empty() || words[0][0] != '-')
    return false;
  bool verbose = false;
  for (auto it = words.begin(); it != dashes; ++it) {
    if (*it == "-v" || *it == "--verbose") {
      verbose = true;
      continue;
    }
    throw Error(ErrorKind::usage, "cc: '" + *it +
                                      "' is not an option of kbuild cc (it takes -v before --; "
                                      "the compiler's options go after its name)");
  }
  words.erase(words.begin(), dashes + 1);
  return verbose;
}

// KBUILD_LOG=FILE: one JSON object a line per compiler run (what ccache's
// log_file and SCCACHE_LOG are for): a routed compile's output is not shown
// by the program that ran it (Inductor keeps it only when the compile
// fails). Appended in one write; never a link, a FIFO or a file of another
// user; the line names the output, never the argv (no secret from a -D),
// its strings JSON-escaped (a newline in a path forges no line) and URLs'
// userinfo redacted. docs/environment.md gives its fields.
void append_log(const Environment& env, nlohmann::ordered_json fields, const Console& console) {
  std::optional<std::string> path = env.get_nonempty("KBUILD_LOG");
  if (!path) return;
  // Never opened unless regular: a FIFO with no reader would block the open
  // (and the compile it logs) for ever. O_NONBLOCK for one made meanwhile.
  struct stat st {};
  const bool special = ::lstat(path->c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  const int fd =
      special ? -1
              : ::open(path->c_str(),
                       O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    if (fd >= 0) ::close(fd);
    console.warnings({"KBUILD_LOG=" + *path +
                      " cannot be appended to (a link, not a regular file of this user, or its "
                      "directory is missing); nothing logged"});
    return;
  }
  nlohmann::ordered_json line{{"pid", ::getpid()}};
  for (auto& [field, value] : fields.items()) line[field] = std::move(value);
  const std::string text = dump_json(line) + "\n";
  (void)write_all(fd, text, "KBUILD_LOG");
  ::close(fd);
}

double rounded_seconds(double seconds) {
  return std::round(seconds * 1000) / 1000;
}

// Why a miss missed: the input of the entry found that differs now, or
// that no entry was known; why an uncacheable build was not stored.
void add_cache_reason(nlohmann::ordered_json& fields, const BuildOutcome& outcome) {
  if (outcome.cache == CacheStatus::hit)
    fields["hit"] = outcome.cache_detail == "remote" ? "remote" : "local";
  if (outcome.cache == CacheStatus::miss || outcome.cache == CacheStatus::uncacheable) {
    nlohmann::ordered_json miss = nlohmann::ordered_json::object();
    if (outcome.stale) {
      miss["reason"] = stale_kind_name(outcome.stale->kind);
      if (outcome.stale->kind != StaleKind::damaged)
        miss[outcome.stale->kind == StaleKind::variable_differs ? "variable" : "input"] =
            outcome.stale->what;
    } else {
      miss["reason"] = "no_entry";
    }
    if (outcome.cache == CacheStatus::miss && !outcome.cache_detail.empty())
      miss["detail"] = redact_urls(outcome.cache_detail);
    fields["miss"] = miss;
  }
  if (outcome.cache == CacheStatus::uncacheable)
    fields["uncacheable"] = {
        {"reason", outcome.uncacheable ? uncacheable_name(*outcome.uncacheable) : "not_stored"},
        {"why", redact_urls(outcome.cache_detail)}};
}

void log_compile(const Environment& env, const CompilerCall& call, const BuildOutcome& outcome,
                 double seconds, const std::string& result, const Console& console) {
  nlohmann::ordered_json fields{{"output", redact_urls(call.plan.output)},
                                {"result", result},
                                {"cache", cache_status_name(outcome.cache)}};
  add_cache_reason(fields, outcome);
  nlohmann::ordered_json timings{{"total", rounded_seconds(seconds)}};
  for (const StageTiming& t : outcome.timings) timings[t.stage] = rounded_seconds(t.seconds);
  fields["seconds"] = timings;
  append_log(env, fields, console);
}

int run_as_it_is(const std::vector<std::string>& argv, const Environment& env,
                 const Console& console) {
  const auto started = std::chrono::steady_clock::now();
  ProcessRequest options;
  options.handle_interrupts = true;
  options.environment = &env;
  ProcessResult r = real_processes().run(argv, options);
  const int code = r.interrupted_by ? 128 + r.interrupted_by
                   : r.exited       ? r.exit_code
                                    : 128 + r.signal;
  auto o = std::find(argv.begin(), argv.end(), std::string("-o"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  append_log(env,
             {{"output", o != argv.end() && o + 1 != argv.end() ? redact_urls(*(o + 1)) : "-"},
              {"result", "ran-as-it-is"},
              {"exit", code},
              {"seconds", {{"total", rounded_seconds(seconds)}}}},
             console);
  return code;
}

int run_through_kbuild(const CompilerCall& call, const Environment& env, const Console& console) {
  const auto started = std::chrono::steady_clock::now();
  Driver driver(SessionRequest{}, env);  // a compiler call reads no device file
  ConsoleListener listener(console, false);
  Compilation run = driver.compile(call, listener);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (run.failure) {
    log_compile(env, call, run.outcome, seconds,
                std::string("failed:") + stage_name(run.failure->kind()), console);
    if (!compiler_said_why(run)) throw *run.failure;
    say_what_ran(console, run.outcome, call.plan.output);
    console.info(run.failure->what());
    return run.exit_code;
  }
  say_what_ran(console, run.outcome, call.plan.output);
  log_compile(env, call, run.outcome, seconds, "ok", console);
  return 0;
}

constexpr const char* kHelp =
    "usage: kbuild cc [--] COMPILER ARGS...   (or kbuild started through a link named g++, "
    "c++ or clang++)\n"
    "       kbuild cc -v -- COMPILER ARGS...   (-v: say what ran and why the cache missed)\n"
    "Runs COMPILER ARGS exactly as given. A compile to one object, a shared library or a\n"
    "precompiled header (-c/-shared/-x c++-header with one -o) goes through kbuild's output\n"
    "cache and KBUILD_LAUNCHER, -MD/-MMD with their dependency file (-MF, -MT, -MQ, -MP);\n"
    "a hit replays what the compiler printed. Anything else (-E, -M, -MM, --version, files\n"
    "written besides the output in any spelling: --coverage, -da, -Wa,-adhln=F, -Xlinker\n"
    "-Map=F, ...; long spellings such as --output=, an output that is not a regular file,\n"
    "files the compiler refuses itself: a missing source or output directory) runs as it\n"
    "is, with the compiler's own messages and exit code. A masquerade link runs KBUILD_CC_COMPILER "
    "when set,\n"
    "else the first compiler of its name on PATH that is not kbuild.\n"
    "Variables: KBUILD_NO_CACHE=1, KBUILD_LAUNCHER, KBUILD_VERBOSE=1, KBUILD_CACHE_DIR,\n"
    "KBUILD_LOG=FILE (a JSON object a line per compile: output, result, cache status and\n"
    "why it missed, seconds; docs/environment.md).\n";

}  // namespace

std::optional<int> compiler_mode(int argc, char** argv, const Environment& env) {
  auto words = compiler_argv(argc, argv);
  if (!words) return std::nullopt;
  const bool masquerade = masquerading(fs::path(argv[0]).filename().string());
  const bool no_color = env.get_nonempty("NO_COLOR").has_value();
  bool verbose = env.get_nonempty("KBUILD_VERBOSE").value_or("0") != "0";
  try {
    if (!masquerade) verbose = take_cc_options(*words) || verbose;
  } catch (const Error& e) {
    Console(false, verbose, no_color).error(e);
    return exit_code(e.kind());
  }
  Console console(false, verbose, no_color);
  try {
    if (!masquerade && words->size() == 1 && ((*words)[0] == "--help" || (*words)[0] == "-h")) {
      std::cout << kHelp;
      return 0;
    }
    if (words->empty() || (*words)[0].empty() || (*words)[0][0] == '-')
      throw Error(ErrorKind::usage,
                  "cc needs a compiler command: kbuild cc -- g++ SOURCE -c -o OUTPUT ... "
                  "(kbuild cc --help)");
    if (auto outer = env.get_nonempty(kRunningMarker))
      throw Error(ErrorKind::usage,
                  "cc: kbuild started itself as the compiler: " + this_kbuild() + " (as " +
                      std::string(argv[0]) + ") was run by the compiler mode of " + *outer +
                      "; a compiler wrapper or a second kbuild named like the compiler comes "
                      "first: name the real compiler's path (or KBUILD_CC_COMPILER)");
    (*words)[0] = real_compiler((*words)[0], masquerade, env);
    Environment child = env;
    child.set(kRunningMarker, this_kbuild());
    auto call = plan_compiler_call(*words);
    if (!call || compiler_refuses_files(*call)) return run_as_it_is(*words, child, console);
    return run_through_kbuild(*call, child, console);
  } catch (const Error& e) {
    console.error(e);
    return exit_code(e.kind());
  } catch (const std::exception& e) {
    console.error("internal", std::string(e.what()) + " (please report this)");
    return exit_code(ErrorKind::internal);
  }
}

}  // namespace kbuild::cli
