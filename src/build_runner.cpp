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

#include "kbuild/error.hpp"
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

// Removes temporaries of `output` left by a kbuild that was killed (its pid
// no longer runs): ".NAME.kbuild-tmp.PID.N", and their ".d"/".o" companions.
void remove_stale_temporaries(const std::string& output) {
  fs::path out(output);
  fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string prefix = "." + out.filename().string() + ".kbuild-tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) fs::remove(it->path(), ec);
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
  // Renaming over a FIFO or a device node (-o /dev/null as root) would
  // replace it with a regular file.
  if (stat(output.c_str(), &out) == 0 && !S_ISREG(out.st_mode))
    throw Error(ErrorKind::output, "output " + output +
                                       " is not a regular file; kbuild replaces only regular "
                                       "files: choose another -o");
}

// Creates the temporary file the compiler will overwrite: proves the
// directory is writable (permission bits alone say nothing for root or on a
// read-only mount) and reserves the unique name.
void reserve_temporary(const std::string& tmp, const std::string& output) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ErrorKind::output, "cannot write beside " + output + ": " + std::strerror(errno) +
                                       "; choose a writable output directory");
  ::close(fd);
}

}  // namespace

std::string temporary_output_path(const std::string& output) {
  fs::path p(output);
  static std::mt19937_64 rng{std::random_device{}()};
  // Built by appending: g++ 12 warns falsely (-Wrestrict) on literal + string chains here.
  std::string name = ".";
  name += p.filename().string();
  name += ".kbuild-tmp.";
  name += std::to_string(getpid());
  name += '.';
  name += std::to_string(rng() % 1000000);
  return (p.parent_path() / name).string();
}

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

// Removes a file on scope exit unless told to keep it.
struct RemoveUnlessKept {
  std::string path;
  bool keep = false;
  ~RemoveUnlessKept() {
    std::error_code ignored;
    if (!keep) fs::remove(path, ignored);
  }
};

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

// The command itself, or (for a launcher that only handles compiling) each
// source compiled through the launcher, then one local link into `tmp`.
void run_steps(const BuildPlan& plan, const std::vector<std::string>& sources,
               const Launcher& launcher, const std::vector<std::string>& argv,
               const std::string& tmp, const Environment& env,
               std::optional<std::chrono::milliseconds> timeout, BuildOutcome& outcome) {
  if (launcher.argv.empty()) return run_step(plan, argv, env, timeout, outcome);
  if (!launcher.split || !links(plan.kind) || only_objects(sources)) {
    std::vector<std::string> launched = launcher.argv;
    launched.insert(launched.end(), argv.begin(), argv.end());
    outcome.steps.push_back(launched);
    return run_step(plan, launched, env, timeout, outcome);
  }
  BuildOptions compile_options = plan.options;
  compile_options.remove(OptionList::cflags, "shared");
  std::vector<std::string> object_names;
  for (std::size_t i = 0; i < sources.size(); ++i)
    object_names.push_back(tmp + "." + std::to_string(i) + ".o");
  std::vector<std::unique_ptr<RemoveUnlessKept>> cleanup;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    cleanup.push_back(std::make_unique<RemoveUnlessKept>(RemoveUnlessKept{object_names[i]}));
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
    outcome.steps.push_back(launched);
    run_step(plan, launched, env, timeout, outcome);
  }
  Command link =
      assemble(plan.options,
               AssembleInput{argv[0], object_names, OutputKind::shared_library, tmp, std::nullopt});
  outcome.steps.push_back(link.argv);
  Environment link_env = env;
  link_env.unset("SUNPRO_DEPENDENCIES");  // the headers were listed by the compile steps
  run_step(plan, link.argv, link_env, timeout, outcome);
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

void run_build(const BuildPlan& plan, const std::vector<std::string>& sources,
               const BuildSettings& settings, const Environment& env, BuildOutcome& outcome) {
  check_sources(sources, plan.output);
  check_output_dir(plan.output);
  remove_stale_temporaries(plan.output);

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
  // From here until the temporary is renamed or removed, an interrupt is
  // taken only while the compiler runs (where it is handled).
  InterruptGuard guard;
  const std::string tmp = temporary_output_path(plan.output);
  reserve_temporary(tmp, plan.output);
  argv[plan.command.output_index] = tmp;
  std::error_code ec;
  RemoveUnlessKept temporary{tmp};

  OutputCache* cache = settings.cache && settings.cache->enabled() ? settings.cache : nullptr;
  auto start = std::chrono::steady_clock::now();
  std::optional<std::string> key;
  // Split builds of several sources would each list their headers in one
  // depfile; they are not cached.
  bool several_steps =
      settings.launcher.split && links(plan.kind) && sources.size() > 1 && !only_objects(sources);
  if (cache) {
    if (!several_steps) key = cache->key(plan, sources, *compiler, env);
    outcome.cache = key ? "miss" : "uncacheable";
    if (key && cache->fetch(*key, tmp)) outcome.cache = "hit";
    if (key) cache->count(outcome.cache == "hit");
    outcome.timings.push_back({"cache", seconds_since(start)});
  }
  if (outcome.cache != "hit") {
    // On a miss the compiler also lists the headers it reads (without a
    // change to argv: g++ reads SUNPRO_DEPENDENCIES).
    const std::string depfile = tmp + ".d";
    RemoveUnlessKept remove_depfile{depfile};
    Environment child = env;
    if (key) child.set("SUNPRO_DEPENDENCIES", depfile + " " + plan.output);
    if (!settings.depfile.empty())
      child.set("SUNPRO_DEPENDENCIES", settings.depfile + " " + plan.output);
    start = std::chrono::steady_clock::now();
    try {
      run_steps(plan, sources, launcher, argv, tmp, child, settings.timeout, outcome);
    } catch (...) {
      outcome.timings.push_back({"compile", seconds_since(start)});  // failed builds are timed too
      throw;
    }
    outcome.timings.push_back({"compile", seconds_since(start)});
    if (key && !cache->store(*key, tmp, depfile, !only_objects(sources)))
      outcome.cache = "uncacheable";
    if (key) cache->evict();
  }
  if (settings.load_check.enabled) {
    start = std::chrono::steady_clock::now();
    outcome.load =
        check_load(settings.load_check, tmp, plan.options.values(OptionList::libraries_dirs), env);
    outcome.timings.push_back({"load", seconds_since(start)});
    if (!outcome.load->ok) {
      std::string why = outcome.load->message;
      for (char& c : why)
        if (c == '\n') c = ';';
      throw Error(ErrorKind::load_failed,
                  "load failed: " + why + "; " + plan.output + " left as it was");
    }
  }
  fs::rename(tmp, plan.output, ec);
  if (ec)
    throw Error(ErrorKind::output,
                "cannot move the result into " + plan.output + ": " + ec.message());
  temporary.keep = true;
}

}  // namespace kbuild
