#include "kbuild/build_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>

#include "kbuild/atomic_output.hpp"
#include "kbuild/error.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/shell.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

void check_sources(const std::vector<std::string>& sources, const std::string& output) {
  for (const std::string& s : sources) {
    struct stat st {};
    if (stat(s.c_str(), &st) != 0)
      throw Error(ErrorKind::input, "source " + s + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
      throw Error(ErrorKind::input, "source " + s + " is not a regular file");
    if (access(s.c_str(), R_OK) != 0)
      throw Error(ErrorKind::input, "source " + s + " is not readable");
    std::error_code ec;
    if (fs::equivalent(s, output, ec))
      throw Error(ErrorKind::usage, "output " + output + " is also a source; choose another -o");
  }
}

void check_output_dir(const std::string& output) {
  std::string dir = fs::path(output).parent_path().string();
  if (dir.empty()) dir.assign(1, '.');
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    throw Error(ErrorKind::output, "output directory " + dir + " does not exist; create it first");
  if (!S_ISDIR(st.st_mode))
    throw Error(ErrorKind::output, "output directory " + dir + " is not a directory");
  struct stat out {};
  if (stat(output.c_str(), &out) == 0 && S_ISDIR(out.st_mode))
    throw Error(ErrorKind::output,
                "output " + output + " is a directory; give a file name with -o");
}

}  // namespace

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// Which provider (and file:line) asked for library `name`.
std::string added_by(const BuildOptions& options, const std::string& name) {
  for (const Entry& e : options.entries(OptionList::libraries)) {
    if (e.value != name) continue;
    std::string where = e.origin.provider;
    if (!e.origin.file.empty()) where += ", " + e.origin.file + ":" + std::to_string(e.origin.line);
    return where;
  }
  return "the passthrough or extra flags";
}

// True when every input is already compiled: a pure link reads no headers.
bool only_objects(const std::vector<std::string>& sources) {
  for (const std::string& s : sources) {
    std::string ext = fs::path(s).extension().string();
    if (ext != ".o" && ext != ".a" && ext != ".so") return false;
  }
  return true;
}

[[noreturn]] void throw_toolchain_failure(const BuildPlan& plan, const ProcessResult& p,
                                          const FailureAnalysis& a) {
  const std::string kept = "; " + plan.output + " left as it was";
  if (a.step == FailedStep::link) {
    if (!a.missing_libraries.empty()) {
      std::string what;
      for (const std::string& lib : a.missing_libraries)
        what += (what.empty() ? "" : "; ") +
                ("cannot find -l" + lib + " (added by " + added_by(plan.options, lib) + ")");
      std::vector<std::string> dirs = plan.options.values(OptionList::libraries_dirs);
      throw Error(ErrorKind::link_failed,
                  "link failed: " + what + "; searched " +
                      (dirs.empty() ? std::string("no -L dirs") : "-L " + join(dirs, ", ")) +
                      " and the system's; fix the library dirs or install the library" + kept);
    }
    if (!a.undefined_symbols.empty())
      throw Error(ErrorKind::link_failed,
                  "link failed: undefined reference to '" + a.undefined_symbols.front() + "'" +
                      (a.undefined_symbols.size() > 1
                           ? " and " + std::to_string(a.undefined_symbols.size() - 1) + " more"
                           : std::string()) +
                      "; a library is missing from the link line" + kept);
    throw Error(ErrorKind::link_failed,
                "link failed (" + p.describe() + "): " + a.first_error + kept);
  }
  std::string first = a.first_error.empty() ? std::string() : ": " + a.first_error;
  throw Error(ErrorKind::compile_failed, "compile failed (" + p.describe() + ")" + first + kept);
}

// Runs one compiler step; throws the stage that failed.
void run_step(const BuildPlan& plan, const std::vector<std::string>& argv, const Environment& env,
              std::optional<std::chrono::milliseconds> timeout, BuildOutcome& outcome) {
  ProcessOptions opts;
  opts.timeout = timeout;
  opts.handle_interrupts = true;
  opts.capture_output = true;  // for the failure analysis and the report
  opts.tee_output = true;      // ...while the user still sees it live
  opts.environment = &env;
  outcome.process = run_process(argv, opts);
  const ProcessResult& p = *outcome.process;
  if (p.interrupted_by)
    throw Error(ErrorKind::interrupted,
                "interrupted; the compiler was stopped and " + plan.output + " left as it was");
  if (p.timed_out)
    throw Error(ErrorKind::compile_failed,
                "compile failed: the compiler ran past --timeout " +
                    std::to_string(timeout->count() / 1000.0).substr(0, 5) + " s and was ended; " +
                    plan.output + " left as it was");
  if (!p.success()) {
    bool step_links = std::find(argv.begin(), argv.end(), "-c") == argv.end() && links(plan.kind);
    outcome.failure = analyze_failure(p.out + p.err, step_links);
    throw_toolchain_failure(plan, p, *outcome.failure);
  }
}

// Where the compiler lists what it read: a known launcher (ccache refuses
// SUNPRO_DEPENDENCIES) is given -MD -MF on its own compile steps; anything
// else gets SUNPRO_DEPENDENCIES, which keeps argv Inductor's.
struct DepfileRoute {
  std::string path;  // "": not recorded
  bool through_argv = false;
};

std::vector<std::string> with_depfile(std::vector<std::string> argv, const DepfileRoute& route) {
  if (route.through_argv && !route.path.empty())
    argv.insert(argv.end(), {"-MD", "-MF", route.path});
  return argv;
}

// The command itself, or (for a launcher that only handles compiling) each
// source compiled through the launcher, then one local link into the result.
void run_steps(const BuildPlan& plan, const std::vector<std::string>& sources,
               const Launcher& launcher, const std::vector<std::string>& argv,
               const AtomicOutput& out, const DepfileRoute& route, const Environment& env,
               std::optional<std::chrono::milliseconds> timeout, BuildOutcome& outcome) {
  if (launcher.argv.empty()) return run_step(plan, argv, env, timeout, outcome);
  if (!launcher.split || !links(plan.kind) || only_objects(sources)) {
    std::vector<std::string> launched = launcher.argv;
    launched.insert(launched.end(), argv.begin(), argv.end());
    if (!only_objects(sources)) launched = with_depfile(launched, route);
    outcome.steps.push_back(launched);
    return run_step(plan, launched, env, timeout, outcome);
  }
  BuildOptions compile_options = plan.options;
  compile_options.remove(OptionList::cflags, "shared");
  std::vector<std::string> object_names;
  for (std::size_t i = 0; i < sources.size(); ++i)
    object_names.push_back(out.scratch(std::to_string(i) + ".o"));
  for (std::size_t i = 0; i < sources.size(); ++i) {
    Command c =
        assemble(compile_options,
                 AssembleInput{
                     argv[0], {sources[i]}, OutputKind::object, object_names[i], plan.include_pch});
    std::vector<std::string> launched = launcher.argv;
    for (const std::string& word : c.argv) {
      if (word == "-march=native" && launcher.resolve_native) {
        std::vector<std::string> native = resolve_native_flags(argv[0], env);
        if (native.empty())
          throw Error(ErrorKind::compiler_missing, "cannot tell what -march=native means for " +
                                                       argv[0] +
                                                       " (its -### output); drop --resolve-native");
        launched.insert(launched.end(), native.begin(), native.end());
      } else {
        launched.push_back(word);
      }
    }
    launched = with_depfile(launched, route);
    outcome.steps.push_back(launched);
    run_step(plan, launched, env, timeout, outcome);
  }
  Command link = assemble(
      plan.options,
      AssembleInput{argv[0], object_names, OutputKind::shared_library, out.path(), std::nullopt});
  outcome.steps.push_back(link.argv);
  run_step(plan, link.argv, env, timeout, outcome);
}

// The key's inputs for the command as it will run.
KeyInput key_input(const BuildPlan& plan, const std::vector<std::string>& sources,
                   const Launcher& launcher, const std::vector<std::string>& argv,
                   const BuildSettings& settings) {
  KeyInput in;
  in.argv = launcher.argv;
  in.argv.insert(in.argv.end(), argv.begin(), argv.end());
  in.output_index = launcher.argv.size() + plan.command.output_index;
  in.output = plan.output;
  in.sources = sources;
  in.programs = {argv[0]};
  if (!launcher.argv.empty()) in.programs.push_back(launcher.argv[0]);
  in.extra = settings.key_extra;
  in.links = links(plan.kind);
  in.libraries = plan.options.values(OptionList::libraries);
  in.libraries_dirs = plan.options.values(OptionList::libraries_dirs);
  return in;
}

// The headers a depfile lists, less the sources (checked by content).
std::string headers_only(const std::string& depfile_text, const std::vector<std::string>& sources) {
  std::string rule = "deps:";
  for (const std::string& path : parse_depfile(depfile_text)) {
    bool is_source = false;
    std::error_code ec;
    for (const std::string& s : sources) is_source = is_source || fs::equivalent(path, s, ec);
    if (is_source) continue;
    std::string escaped;
    for (char c : path) escaped += c == ' ' ? std::string("\\ ") : std::string(1, c);
    rule += " " + escaped;
  }
  return rule + "\n";
}

mode_t output_mode(OutputKind kind) {
  // What the compiler gives a new file: executable for a linked library.
  return kind == OutputKind::shared_library ? 0777 : 0666;
}

}  // namespace

std::vector<std::string> resolve_native_flags(const std::string& compiler, const Environment& env) {
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(30);
  opts.environment = &env;
  ProcessResult r =
      run_process({compiler, "-###", "-march=native", "-E", "-x", "c++", "/dev/null"}, opts);
  std::istringstream lines(r.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("cc1") == std::string::npos) continue;
    auto words = shell_split(line);
    if (!words) break;
    std::vector<std::string> flags;
    bool after_march = false;
    for (const std::string& w : *words) {
      if (w.rfind("-march=", 0) == 0) after_march = true;
      if (after_march && (w.rfind("-m", 0) == 0 || w.rfind("--param=", 0) == 0)) flags.push_back(w);
    }
    return flags;
  }
  return {};
}

Launcher parse_launcher(const std::string& text) {
  Launcher l;
  auto words = shell_split(text);
  if (!words) throw Error(ErrorKind::usage, "--launcher '" + text + "' has an unbalanced quote");
  l.argv = *words;
  if (!l.argv.empty()) {
    std::string name = fs::path(l.argv[0]).filename().string();
    l.split = name == "ccache" || name == "sccache" || name == "distcc" || name == "icecc" ||
              name == "pump";
  }
  return l;
}

std::optional<std::string> malformed_output(int fd, OutputKind kind) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("it cannot be read");
  unsigned char head[64] = {};
  ssize_t got = ::pread(fd, head, sizeof head, 0);
  if (got < 0) return std::string("it cannot be read");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (kind == OutputKind::preprocessed) return std::nullopt;  // text; may be empty
  if (size == 0) return std::string("it is empty");
  if (kind == OutputKind::precompiled_header) {
    if (got >= 4 && (std::memcmp(head, "gpch", 4) == 0 || std::memcmp(head, "CPCH", 4) == 0))
      return std::nullopt;
    return std::string("it is not a precompiled header");
  }
  if (got < 52 || std::memcmp(head,
                              "\x7f"
                              "ELF",
                              4) != 0)
    return std::string("it is not an ELF file");
  auto number = [&head](std::size_t at, std::size_t bytes) {
    std::uint64_t v = 0;  // ELFDATA2LSB: little-endian, as on every host kbuild supports
    for (std::size_t i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(head[at + i]) << (8 * i);
    return v;
  };
  bool is64 = head[4] == 2;
  if (is64 && got < 64) return std::string("its ELF header is cut short");
  std::uint64_t shoff = is64 ? number(0x28, 8) : number(0x20, 4);
  std::uint64_t shentsize = is64 ? number(0x3A, 2) : number(0x2E, 2);
  std::uint64_t shnum = is64 ? number(0x3C, 2) : number(0x30, 2);
  if (shoff + shentsize * shnum > size)
    return std::string("it is cut short (its section headers end past its size)");
  return std::nullopt;
}

void run_build(const BuildPlan& plan, const std::vector<std::string>& sources,
               const BuildSettings& settings, const Environment& env, BuildOutcome& outcome) {
  check_sources(sources, plan.output);
  check_output_dir(plan.output);

  std::vector<std::string> argv = plan.command.argv;
  auto compiler = find_executable(argv[0], env);
  if (!compiler)
    throw Error(ErrorKind::compiler_missing,
                "compiler '" + argv[0] +
                    "' not found or not executable; install it, or choose "
                    "one with --cxx PATH or the CXX variable");
  argv[0] = *compiler;
  Launcher launcher = settings.launcher;
  if (!launcher.argv.empty()) {
    auto found = find_executable(launcher.argv[0], env);
    if (!found)
      throw Error(ErrorKind::compiler_missing,
                  "launcher '" + launcher.argv[0] + "' not found; install it or drop --launcher");
    launcher.argv[0] = *found;
  }
  // From here until the work directory is removed, an interrupt is taken
  // only while the compiler runs (where it is handled).
  InterruptGuard guard;
  AtomicOutput out(plan.output);
  argv[plan.command.output_index] = out.path();

  OutputCache* cache = settings.cache && settings.cache->enabled() ? settings.cache : nullptr;
  auto start = std::chrono::steady_clock::now();
  std::optional<CacheKey> key;
  // Split builds of several sources would each list their headers in one
  // depfile; they are not cached.
  bool several_steps =
      launcher.split && links(plan.kind) && sources.size() > 1 && !only_objects(sources);
  KeyInput key_in = key_input(plan, sources, launcher, argv, settings);
  if (cache) {
    if (!several_steps) key = cache_key(key_in, env);
    outcome.cache = key ? "miss" : "uncacheable";
    if (key) {
      Result<UniqueFd> result = out.create_result(output_mode(plan.kind));
      if (result && cache->fetch(key->hex, result->get())) outcome.cache = "hit";
      if (outcome.cache != "hit") out.discard_result();
      cache->count(outcome.cache == "hit");
    }
    outcome.timings.push_back({"cache", seconds_since(start)});
  }
  if (outcome.cache != "hit") {
    const bool record = key.has_value() || settings.record_inputs;
    DepfileRoute route;
    Environment child = env;
    if (record && !only_objects(sources)) {
      route.path = out.depfile_path();
      route.through_argv = launcher.split;
      // g++ takes the file name up to the first blank (depfile_path has
      // none) and the rule's target after it.
      if (!route.through_argv) child.set("SUNPRO_DEPENDENCIES", route.path + " " + plan.output);
    }
    start = std::chrono::steady_clock::now();
    try {
      run_steps(plan, sources, launcher, argv, out, route, child, settings.timeout, outcome);
    } catch (...) {
      outcome.timings.push_back({"compile", seconds_since(start)});  // failed builds are timed too
      throw;
    }
    outcome.timings.push_back({"compile", seconds_since(start)});
    Result<UniqueFd> result = out.open_result();
    std::optional<std::string> bad = result ? malformed_output(result->get(), plan.kind)
                                            : std::optional<std::string>(result.why());
    if (bad)
      throw Error(ErrorKind::compile_failed,
                  "compile failed: the compiler exited 0 but its output is not usable (" + *bad +
                      "); " + plan.output + " left as it was");
    std::optional<std::string> depfile_text;
    if (!route.path.empty()) depfile_text = read_whole_file(route.path);
    if (settings.record_inputs) outcome.depfile_text = depfile_text;
    outcome.started = out.started();
    if (key) {
      BuildInputs inputs;
      inputs.started = out.started();
      Status stored = Failure{"the compiler did not list the files it read"};
      if (depfile_text || only_objects(sources)) {
        inputs.depfile_text = headers_only(depfile_text.value_or(""), sources);
        inputs.include_search = include_search_dirs(argv, env);
        if (links(plan.kind) && !key_in.libraries.empty())
          inputs.library_search = library_search_dirs(argv[0], key_in.libraries_dirs, env);
        stored = cache->store(*key, result->get(), key_in, inputs);
      }
      if (!stored) {
        outcome.cache = "uncacheable";
        outcome.cache_detail = stored.why();
      }
      cache->evict();
    }
  }
  if (settings.load_check.enabled) {
    start = std::chrono::steady_clock::now();
    outcome.load = check_load(settings.load_check, out.path(),
                              plan.options.values(OptionList::libraries_dirs), env);
    outcome.timings.push_back({"load", seconds_since(start)});
    if (!outcome.load->ok) {
      std::string why = outcome.load->message;
      for (char& c : why)
        if (c == '\n') c = ';';
      throw Error(ErrorKind::load_failed,
                  "load failed: " + why + "; " + plan.output + " left as it was");
    }
  }
  out.commit();
}

}  // namespace kbuild
