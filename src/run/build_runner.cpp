#include "kbuild/build_runner.hpp"
#include "kbuild/elapsed.hpp"

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
#include "kbuild/file_util.hpp"
#include "kbuild/remote_cache.hpp"
#include "kbuild/shell.hpp"
#include "run/cache_counters.hpp"
#include "run/failure_message.hpp"
#include "run/input_manifest.hpp"
#include "site/include_search.hpp"
#include "site/library_search.hpp"
#include "util/atomic_output.hpp"

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
  // Renaming over a FIFO or a device node (-o /dev/null as root) would
  // replace it with a regular file.
  if (stat(output.c_str(), &out) == 0 && !S_ISREG(out.st_mode))
    throw Error(ErrorKind::output, "output " + output +
                                       " is not a regular file; kbuild replaces only regular "
                                       "files: choose another -o");
}

}  // namespace

const char* cache_status_name(CacheStatus status) {
  switch (status) {
    case CacheStatus::off: return "off";
    case CacheStatus::hit: return "hit";
    case CacheStatus::miss: return "miss";
    case CacheStatus::uncacheable: return "uncacheable";
  }
  return "off";
}

namespace {

// Runs one compiler step; throws the stage that failed.
void run_step(const BuildPlan& plan, const Step& step, const std::vector<std::string>& argv,
              const Environment& env, const BuildSettings& settings, ProcessRunner& processes,
              BuildOutcome& outcome) {
  ProcessOptions opts;
  opts.timeout = settings.timeout;
  opts.handle_interrupts = true;
  opts.capture_output = true;  // for the failure analysis and the report
  opts.tee_output = true;      // ...while the user still sees it live
  opts.environment = &env;
  outcome.steps.push_back(argv);
  outcome.process = processes.run(argv, opts);
  const ProcessResult& p = *outcome.process;
  if (p.interrupted_by)
    throw Error(ErrorKind::interrupted,
                "interrupted; the compiler was stopped" + untouched_output(plan.output));
  if (p.timed_out)
    throw Error(ErrorKind::compile_failed,
                "compile failed: the compiler ran past --timeout " +
                    std::to_string(settings.timeout->count() / 1000.0).substr(0, 5) +
                    " s and was ended" + untouched_output(plan.output));
  if (!p.success()) {
    outcome.failure = analyze_failure(p.out + p.err, step.links);
    throw toolchain_error(plan.options, plan.output, p, *outcome.failure);
  }
}

// The programs the steps name, resolved once: the compiler and the launcher.
struct Programs {
  std::string compiler, launcher;
};

Programs find_programs(const std::vector<Step>& steps, const Environment& env) {
  Programs found;
  for (const Step& s : steps) {
    if (s.kind != StepKind::command) continue;
    const std::string& compiler = s.argv[s.compiler_index];
    auto path = find_executable(compiler, env);
    if (!path)
      throw Error(ErrorKind::compiler_missing,
                  "compiler '" + compiler +
                      "' not found or not executable; install it, or choose "
                      "one with --cxx PATH or the CXX variable");
    found.compiler = *path;
    if (s.compiler_index > 0) {
      auto launcher = find_executable(s.argv[0], env);
      if (!launcher)
        throw Error(ErrorKind::compiler_missing,
                    "launcher '" + s.argv[0] + "' not found; install it or drop --launcher");
      found.launcher = *launcher;
    }
    break;  // every step names the same programs
  }
  return found;
}

// A step's argv as it runs: programs resolved, its own files in the work
// directory.
std::vector<std::string> as_run(const Step& step, const Programs& programs,
                                const AtomicOutput& out) {
  std::vector<std::string> argv = step.argv;
  if (step.compiler_index > 0) argv[0] = programs.launcher;
  argv[step.compiler_index] = programs.compiler;
  for (std::size_t i : step.work_files)
    argv[i] = out.scratch(fs::path(argv[i]).filename().string());
  return argv;
}

// The key's inputs: every command step as planned, its own files by
// extension only (their names follow the output's), and the programs.
KeyInput key_input(const BuildPlan& plan, const std::vector<Step>& steps,
                   const std::vector<std::string>& sources, const Programs& programs,
                   const BuildSettings& settings) {
  KeyInput in;
  for (const Step& s : steps) {
    if (s.kind != StepKind::command) continue;
    std::vector<std::string> argv = s.argv;
    for (std::size_t i : s.work_files) argv[i] = "<work>" + fs::path(argv[i]).extension().string();
    in.argv.insert(in.argv.end(), argv.begin(), argv.end());
    in.argv.emplace_back("<next step>");
  }
  in.output_index = in.argv.size();  // the output is among the work files
  in.output = plan.output;
  in.sources = sources;
  in.programs = {programs.compiler};
  if (!programs.launcher.empty()) in.programs.push_back(programs.launcher);
  in.extra = settings.key_extra;
  in.links = links(plan.kind);
  in.libraries = plan.options.values(OptionList::libraries);
  in.libraries_dirs = plan.options.values(OptionList::libraries_dirs);
  return in;
}

// The headers the depfiles list (one make rule each), less the sources
// (checked by content), as one rule.
std::string headers_only(const std::vector<std::string>& depfile_texts,
                         const std::vector<std::string>& sources) {
  std::string rule = "deps:";
  for (const std::string& text : depfile_texts)
    for (const std::string& path : parse_depfile(text)) {
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

// Runs the command steps; returns the texts of the dependency lists, or
// nothing when a step that should have written one did not.
std::optional<std::vector<std::string>> run_steps(const BuildPlan& plan,
                                                  const std::vector<Step>& steps,
                                                  const Programs& programs, AtomicOutput& out,
                                                  const BuildSettings& settings,
                                                  const Environment& env, ProcessRunner& processes,
                                                  BuildOutcome& outcome) {
  std::vector<std::string> lists;
  bool complete = true;
  for (const Step& step : steps) {
    if (step.kind != StepKind::command) continue;
    std::vector<std::string> argv = as_run(step, programs, out);
    std::string list_file;
    if (step.input_list == InputList::argv) list_file = argv[step.input_list_index];
    if (step.input_list == InputList::environment) {
      // g++ takes the file name up to the first blank (depfile_path has
      // none) and the rule's target after it.
      list_file = out.depfile_path();
      Environment child = env;
      child.set("SUNPRO_DEPENDENCIES", list_file + " " + plan.output);
      run_step(plan, step, argv, child, settings, processes, outcome);
    } else {
      run_step(plan, step, argv, env, settings, processes, outcome);
    }
    if (!list_file.empty()) {
      auto text = read_whole_file(list_file);
      if (text) lists.push_back(*text);
      complete = complete && text.has_value();
    }
  }
  if (!complete) return std::nullopt;
  return lists;
}

void store(OutputCache& cache, const CacheKey& key, const KeyInput& key_in, int result,
           const std::optional<std::vector<std::string>>& lists, const BuildPlan& plan,
           const std::vector<Step>& steps, const std::vector<std::string>& sources,
           const AtomicOutput& out, const Programs& programs, const Environment& env,
           ProcessRunner& processes, BuildOutcome& outcome) {
  BuildInputs inputs;
  inputs.started = out.started();
  inputs.dates_fixed = env.get_nonempty("SOURCE_DATE_EPOCH").has_value();
  Status stored = Failure{"the compiler did not list the files it read"};
  if ((lists && !lists->empty()) || links_objects_only(sources)) {
    inputs.depfile_text = headers_only(lists.value_or(std::vector<std::string>{}), sources);
    // The compiler's own search list: the step's words from the compiler on
    // (a launcher in front would be asked instead).
    for (const Step& s : steps) {
      if (s.kind != StepKind::command) continue;
      std::vector<std::string> argv = as_run(s, programs, out);
      argv.erase(argv.begin(), argv.begin() + static_cast<long>(s.compiler_index));
      inputs.include_search = include_search_dirs(argv, env, processes);
      if (!s.links) break;
    }
    if (links(plan.kind) && !key_in.libraries.empty())
      inputs.library_search =
          library_search_dirs(programs.compiler, key_in.libraries_dirs, env, processes);
    stored = cache.store(key, result, key_in, inputs);
  }
  if (!stored) {
    outcome.cache = CacheStatus::uncacheable;
    outcome.cache_detail = stored.why();
  }
  cache.evict();
}

// A local miss asked of the remote cache: its entry written to `dest` (and
// installed locally); else the compile lease taken (held by `lease` until
// the upload), or another builder's entry waited for (false: compile).
bool fetch_remote(RemoteCache& remote, const OutputCache& cache, const std::string& local_key,
                  const std::string& remote_key, int dest, std::optional<LeaseGuard>& lease) {
  if (remote.fetch(remote_key, cache, local_key, dest)) return true;
  if (remote.take_lease(remote_key)) {
    lease.emplace(&remote, remote_key);
    return false;
  }
  return remote.wait_for_entry(remote_key, cache, local_key, dest);
}

}  // namespace

Status check_output_format(int fd, OutputKind kind) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Failure{"it cannot be read"};
  unsigned char head[64] = {};
  ssize_t got = ::pread(fd, head, sizeof head, 0);
  if (got < 0) return Failure{"it cannot be read"};
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (kind == OutputKind::preprocessed) return ok();  // text; may be empty
  if (size == 0) return Failure{"it is empty"};
  if (kind == OutputKind::precompiled_header) {
    if (got >= 4 && (std::memcmp(head, "gpch", 4) == 0 || std::memcmp(head, "CPCH", 4) == 0))
      return ok();
    return Failure{"it is not a precompiled header"};
  }
  if (got < 52 || std::memcmp(head,
                              "\x7f"
                              "ELF",
                              4) != 0)
    return Failure{"it is not an ELF file"};
  auto number = [&head](std::size_t at, std::size_t bytes) {
    std::uint64_t v = 0;  // ELFDATA2LSB: little-endian, as on every host kbuild supports
    for (std::size_t i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(head[at + i]) << (8 * i);
    return v;
  };
  bool is64 = head[4] == 2;
  if (is64 && got < 64) return Failure{"its ELF header is cut short"};
  std::uint64_t shoff = is64 ? number(0x28, 8) : number(0x20, 4);
  std::uint64_t shentsize = is64 ? number(0x3A, 2) : number(0x2E, 2);
  std::uint64_t shnum = is64 ? number(0x3C, 2) : number(0x30, 2);
  if (shoff + shentsize * shnum > size)
    return Failure{"it is cut short (its section headers end past its size)"};
  return ok();
}

void run_build(const BuildPlan& plan, const std::vector<Step>& steps,
               const std::vector<std::string>& sources, const BuildSettings& settings,
               const Environment& env, BuildOutcome& outcome) {
  check_sources(sources, plan.output);
  check_output_dir(plan.output);
  ProcessRunner& processes = settings.processes ? *settings.processes : real_processes();
  const Programs programs = find_programs(steps, env);
  // From here until the work directory is removed, an interrupt is taken
  // only while the compiler runs (where it is handled).
  InterruptGuard guard;
  AtomicOutput out(plan.output);

  OutputCache* cache = settings.cache && settings.cache->enabled() ? settings.cache : nullptr;
  auto start = std::chrono::steady_clock::now();
  std::optional<CacheKey> key;
  const KeyInput key_in = key_input(plan, steps, sources, programs, settings);
  RemoteCache* remote =
      cache && settings.remote && settings.remote->enabled() ? settings.remote : nullptr;
  std::optional<std::string> remote_key;
  std::optional<LeaseGuard> lease;  // held while this build compiles the key
  if (cache) try {
      key = cache_key(key_in, env);
      outcome.cache = key ? CacheStatus::miss : CacheStatus::uncacheable;
      if (key) {
        Result<UniqueFd> result = out.create_result(output_mode(plan.kind));
        if (result && cache->fetch(key->hex, result->get())) outcome.cache = CacheStatus::hit;
        if (remote && result && outcome.cache != CacheStatus::hit &&
            (remote_key = shareable_key(key_in, env, settings.remote_parts, cache->root())) &&
            fetch_remote(*remote, *cache, key->hex, *remote_key, result->get(), lease)) {
          outcome.cache = CacheStatus::hit;
          outcome.cache_detail = "remote";
        } else if (remote && remote_key) {
          outcome.cache_detail = remote->miss_reason();
        }
        if (outcome.cache != CacheStatus::hit) out.discard_result();
        // One locked update of stats.json for the local and the remote counts.
        CounterIncrements counters{{outcome.cache == CacheStatus::hit ? "hits" : "misses", 1}};
        if (remote)
          for (auto& counter : remote->take_counters()) counters.push_back(std::move(counter));
        add_counters(*cache->root(), counters);
      }
      outcome.timings.push_back({"cache", seconds_since(start)});
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::interrupted) throw;
      throw Error(ErrorKind::interrupted,  // the remote cache's wait, not a compiler
                  std::string(e.what()) + " for " + plan.output + "; nothing was compiled" +
                      untouched_output(plan.output));
    }
  if (outcome.cache != CacheStatus::hit) {
    start = std::chrono::steady_clock::now();
    std::optional<std::vector<std::string>> lists;
    try {
      lists = run_steps(plan, steps, programs, out, settings, env, processes, outcome);
    } catch (...) {
      outcome.timings.push_back({"compile", seconds_since(start)});  // failed builds are timed too
      throw;
    }
    outcome.timings.push_back({"compile", seconds_since(start)});
    Result<UniqueFd> result = out.open_result();
    Status usable =
        result ? check_output_format(result->get(), plan.kind) : Status(Failure{result.why()});
    if (!usable)
      throw Error(ErrorKind::compile_failed,
                  "compile failed: the compiler exited 0 but its output is not usable (" +
                      usable.why() + ")" + untouched_output(plan.output));
    if (settings.record_inputs && lists && !lists->empty())
      outcome.depfile_text = headers_only(*lists, {});
    outcome.started = out.started();
    if (key)
      store(*cache, *key, key_in, result->get(), lists, plan, steps, sources, out, programs, env,
            processes, outcome);
    if (remote && remote_key && outcome.cache != CacheStatus::uncacheable) {
      remote->store(*remote_key, *cache, key->hex);
      lease.reset();  // after the upload: those waiting find the entry
      remote->save_stats(*cache);
    }
  }
  for (const Step& step : steps) {
    if (step.kind != StepKind::load_check) continue;
    start = std::chrono::steady_clock::now();
    outcome.load = check_load(settings.load_check, out.path(),
                              plan.options.values(OptionList::libraries_dirs), env, processes);
    outcome.timings.push_back({"load", seconds_since(start)});
    if (!outcome.load->ok) {
      std::string why = outcome.load->message;
      for (char& c : why)
        if (c == '\n') c = ';';
      throw Error(ErrorKind::load_failed, "load failed: " + why + untouched_output(plan.output));
    }
  }
  out.commit();
}

}  // namespace kbuild
