
#include "run/build_runner.hpp"

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
#include <regex>
#include <sstream>

#include "kbuild/error.hpp"
#include "run/input_manifest.hpp"
#include "run/observation.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"
#include "run/storage.hpp"
#include "site/search.hpp"
#include "util/digest.hpp"
#include "util/environment.hpp"
#include "util/file_system.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

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

void check_build_files(const std::vector<std::string>& sources, const std::string& output) {
  check_sources(sources, output);
  check_output_dir(output);
}

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
              const Environment& env, const RunSettings& settings, ProcessRunner& processes,
              BuildOutcome& outcome) {
  ProcessRequest opts;
  opts.timeout = settings.timeout;
  opts.handle_interrupts = true;
  opts.capture_output = true;  // for the failure analysis and the report
  opts.tee_output = true;      // ...while the user still sees it live
  opts.environment = &env;
  outcome.steps.push_back(argv);
  outcome.process = processes.run(argv, opts);
  const ProcessResult& p = *outcome.process;
  outcome.printed.add(p);
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

// Where the compiler writes the dependency file (-MD): in the work
// directory, under a name no other file there has (the result is named
// after the output, the observer's records observed.N).
std::string depfile_in(const AtomicOutput& out) {
  return out.path() + ".kbuild-depfile";
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
  if (step.depfile_index) argv[step.depfile_index] = depfile_in(out);
  return argv;
}

// The key's inputs: every command step as planned, its own files by
// extension only (their names follow the output's), and the programs.
KeyInput key_input(const BuildPlan& plan, const std::vector<Step>& steps,
                   const std::vector<std::string>& sources, const Programs& programs,
                   const RunSettings& settings) {
  KeyInput in;
  for (const Step& s : steps) {
    if (s.kind != StepKind::command) continue;
    std::vector<std::string> argv = s.argv;
    for (std::size_t i : s.work_files) argv[i] = "<work>" + fs::path(argv[i]).extension().string();
    // Where it goes is not keyed (its text is the same), its target is.
    if (s.depfile_index) argv[s.depfile_index] = "<depfile>";
    in.argv.insert(in.argv.end(), argv.begin(), argv.end());
    in.argv.emplace_back("<next step>");
  }
  in.output_index = in.argv.size();  // the output is among the work files
  in.output = plan.output;
  in.sources = sources;
  in.programs = {programs.compiler};
  if (!programs.launcher.empty()) in.programs.push_back(programs.launcher);
  in.extra = settings.key_extra;
  return in;
}

mode_t output_mode(OutputKind kind) {
  // What the compiler gives a new file: executable for a linked library.
  return kind == OutputKind::shared_library ? 0777 : 0666;
}

// The seconds of `stage` so far (0 when not timed yet).
double stage_seconds(const BuildOutcome& outcome, std::string_view stage) {
  for (const StageTiming& t : outcome.timings)
    if (t.stage == stage) return t.seconds;
  return 0;
}

// Adds `seconds` to `stage`: a stage timed in parts (each step's records)
// is one figure.
void add_timing(BuildOutcome& outcome, std::string_view stage, double seconds) {
  for (StageTiming& t : outcome.timings)
    if (t.stage == stage) {
      t.seconds += seconds;
      return;
    }
  outcome.timings.push_back({std::string(stage), seconds});
}

// Runs the command steps; an observed step runs with the observer preloaded,
// and what every observed step did is returned (nothing when none was
// observed).
std::optional<Observation> run_steps(const BuildPlan& plan, const std::vector<Step>& steps,
                                     const Programs& programs, AtomicOutput& out,
                                     const RunSettings& settings, const Environment& env,
                                     ProcessRunner& processes, BuildOutcome& outcome,
                                     EarlyDigests* early) {
  std::optional<Observation> observed;
  const std::string observer = settings.observer.empty() ? observer_library() : settings.observer;
  int step_number = 0;
  for (const Step& step : steps) {
    if (step.kind != StepKind::command) continue;
    std::vector<std::string> argv = as_run(step, programs, out);
    if (!step.unobservable.empty()) {
      if (!observed) observed.emplace();
      observed->unobservable = step.unobservable;
    }
    if (!step.observed) {
      run_step(plan, step, argv, env, settings, processes, outcome);
      continue;
    }
    if (!observed) observed.emplace();
    const std::string records =
        fs::absolute(out.scratch("observed." + std::to_string(step_number++))).string();
    // No observer, or no place for its records: nothing reports in, and the
    // manifest says why.
    if (observer.empty() || ::mkdir(records.c_str(), 0700) != 0) {
      if (observer.empty())
        observed->unobservable =
            "kbuild's observer (libkbuild-observer.so) is missing beside kbuild; reinstall kbuild";
      run_step(plan, step, argv, env, settings, processes, outcome);
      continue;
    }
    Environment child = env;
    observe_into(child, observer, records, fs::current_path().string());
    if (early) early->watch(records);
    run_step(plan, step, argv, child, settings, processes, outcome);
    const auto reading = std::chrono::steady_clock::now();
    observed->merge(read_observation(records, argv[0]));
    add_timing(outcome, "observe", seconds_since(reading));
  }
  return observed;
}

// The libraries the steps' links name (-l NAME in the -L directories, as
// written): read by the linker at the end of a compile, so hashed ahead
// while the compiler works. A guess: what is read is observed.
std::vector<std::string> foreseen_libraries(const std::vector<Step>& steps,
                                            const Programs& programs, const AtomicOutput& out) {
  std::vector<std::string> found;
  for (const Step& step : steps) {
    if (step.kind != StepKind::command || !step.observed) continue;
    const std::vector<std::string> argv = as_run(step, programs, out);
    std::vector<std::string> dirs, names;
    for (std::size_t i = 1; i < argv.size(); ++i) {
      const std::string& word = argv[i];
      for (auto [flag, into] : {std::pair{"-L", &dirs}, std::pair{"-l", &names}})
        if (word.rfind(flag, 0) == 0) {
          if (word.size() > 2)
            into->push_back(word.substr(2));
          else if (i + 1 < argv.size())
            into->push_back(argv[++i]);
        }
    }
    for (const std::string& name : names)
      for (const std::string& dir : dirs) {
        std::vector<std::string> files = library_files(name, dir);
        auto there = std::find_if(files.begin(), files.end(), [](const std::string& file) {
          struct stat st {};
          return ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode);
        });
        if (there == files.end()) continue;
        found.push_back(*there);
        break;
      }
  }
  return found;
}

// The manifest of what the observed steps did, or why the build cannot be
// stored: a program that could not be observed, a side output, an input
// that changed, or a file naming __DATE__ without SOURCE_DATE_EPOCH.
Result<std::string> manifest_of(const Observation& observed, const std::vector<Step>& steps,
                                const Programs& programs, const AtomicOutput& out,
                                const RunSettings& settings, const Environment& env,
                                const EarlyDigests* early, Uncacheable& reason) {
  ObservedBuild build;
  build.key_programs = {programs.compiler};
  if (!programs.launcher.empty()) build.key_programs.push_back(programs.launcher);
  // The work directory holds the build's own files (the result, a split
  // build's objects) and the observer's records; anything else written
  // there would be lost with it: a side output.
  build.work_dir = out.work_dir();
  for (const Step& s : steps)
    if (s.kind == StepKind::command) {
      const std::vector<std::string> argv = as_run(s, programs, out);
      for (std::size_t i : s.work_files) build.own_files.push_back(argv[i]);
      if (s.depfile_index) build.own_files.push_back(argv[s.depfile_index]);
    }
  build.env = &env;
  build.started = out.started();
  build.cache = settings.output_cache ? settings.output_cache->root() : nullptr;
  build.files = settings.files;
  build.early = early;
  Result<std::string> manifest = observed_manifest(observed, build, &reason);
  if (!manifest) return manifest;
  if (!env.get_nonempty("SOURCE_DATE_EPOCH")) {
    const std::string user = clock_user(*settings.files, observed.read, early);
    if (!user.empty()) {
      reason = Uncacheable::clock;
      return Failure{user +
                     " uses __DATE__, __TIME__ or __TIMESTAMP__ (set SOURCE_DATE_EPOCH to "
                     "cache it)"};
    }
  }
  return manifest;
}

// Stores the compile in `storage` with its observed manifest; not stored
// (uncacheable, and why) when there is none.
void store(Storage& storage, const EntryKey& key, const KeyInput& key_in, int result,
           const Result<std::string>& manifest, const AtomicOutput& out,
           const std::optional<std::string>& depfile, BuildOutcome& outcome) {
  BuiltOutput built{result, &key_in, {}};
  built.read.started = out.started();
  Result<std::string> entry =
      manifest ? with_replay(*manifest, outcome.printed, depfile) : manifest;
  Status stored = entry ? ok() : Status(Failure{entry.why()});
  if (entry) {
    built.read.manifest = *entry;
    stored = storage.put(key, built);
    outcome.uncacheable = Uncacheable::not_stored;  // if put() refused it
  }
  if (!stored) {
    outcome.cache = CacheStatus::uncacheable;
    outcome.cache_detail = stored.why();
  } else {
    outcome.uncacheable.reset();
  }
}

// The counters of an uncacheable build, by reason.
CounterIncrements uncacheable_counters(Uncacheable reason) {
  return {{"uncacheable", 1}, {std::string("uncacheable_") + uncacheable_name(reason), 1}};
}

// The build's keys: this machine's, and with a remote cache the shared one
// (made on first use: a local hit needs none); or why there are none.
Result<EntryKey> entry_key(const KeyInput& key_in, const Environment& env,
                           const RunSettings& settings) {
  Result<CacheKey> local = cache_key(key_in, *settings.files);
  if (!local) return Failure{local.why()};
  EntryKey key(std::move(*local));
  key.env = &env;
  if (settings.remote_cache && settings.remote_cache->enabled())
    key.make_shared = [&key_in, &settings] {
      ShareableParts parts = settings.remote_parts;
      parts.base_dir = settings.remote_cache->settings().base_dir;
      return shareable_key(key_in, *settings.files, parts,
                           settings.output_cache ? settings.output_cache->root() : nullptr);
    };
  return key;
}

// Adds `counters` to the local cache's stats.json in one locked update.
void save_counters(const RunSettings& settings, const CounterIncrements& counters) {
  CounterIncrements changed;
  for (const auto& counter : counters)
    if (counter.second != 0) changed.push_back(counter);
  if (settings.output_cache && settings.output_cache->root() && !changed.empty())
    add_counters(*settings.output_cache->root(), changed);
}

// Asks `storage` for the build's entry: get(), then lease() on a miss (which
// may wait for another builder's). A hit leaves the output in the work
// directory's result file; outcome.cache says which it was.
std::optional<EntryKey> look_up(Storage& storage, const KeyInput& key_in, const BuildPlan& plan,
                                const RunSettings& settings, const Environment& env,
                                AtomicOutput& out, BuildOutcome& outcome) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<EntryKey> key;
  try {
    Result<EntryKey> keyed = entry_key(key_in, env, settings);
    outcome.cache = keyed ? CacheStatus::miss : CacheStatus::uncacheable;
    if (!keyed) {
      outcome.uncacheable = Uncacheable::unkeyed;
      outcome.cache_detail = keyed.why();
      CounterIncrements counters = uncacheable_counters(Uncacheable::unkeyed);
      counters.emplace_back("misses", 1);
      save_counters(settings, counters);
      outcome.timings.push_back({"cache", seconds_since(start)});
      return key;
    }
    key.emplace(std::move(*keyed));
    Result<UniqueFd> result = out.create_result(output_mode(plan.kind));
    Lookup found = Lookup::missed(Miss::missing, result.why());
    if (result) found = storage.get(*key, result->get());
    if (result && !found.hit) {
      Lookup leased = storage.lease(*key, result->get());
      if (leased.hit || !leased.why.empty()) found = std::move(leased);  // else get's why stands
    }
    if (found.hit) {
      outcome.cache = CacheStatus::hit;
      outcome.entry_manifest = std::move(found.manifest);
      if (found.remote) outcome.cache_detail = "remote";
    } else {
      outcome.cache_detail = found.why;
      outcome.stale = std::move(found.stale);
      out.discard_result();
    }
    // A remote hit is the remote's to count (remote_hits): "hits" are local.
    CounterIncrements counters;
    if (!found.hit) counters.emplace_back("misses", 1);
    if (found.hit && !found.remote) counters.emplace_back("hits", 1);
    for (auto& counter : storage.take_counters()) counters.push_back(std::move(counter));
    save_counters(settings, counters);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::interrupted) throw;
    throw Error(ErrorKind::interrupted,  // the remote cache's wait, not a compiler
                std::string(e.what()) + " for " + plan.output + "; nothing was compiled" +
                    untouched_output(plan.output));
  }
  outcome.timings.push_back({"cache", seconds_since(start)});
  return key;
}

// Releases the lease a lookup took: once stored (now()), or when the build
// ends by an exception.
class Released {
 public:
  Released(Storage* storage, const std::optional<EntryKey>& key) : storage_(storage), key_(key) {}
  ~Released() {
    try {
      now();
    } catch (const std::exception&) {  // a second Ctrl-C: the lease expires on its own
    }
  }
  Released(const Released&) = delete;
  Released& operator=(const Released&) = delete;
  void now() {
    if (storage_ && key_) storage_->release(*key_);
    storage_ = nullptr;
  }

 private:
  Storage* storage_;
  const std::optional<EntryKey>& key_;
};

// What an entry gives back besides the output: what the compiler printed
// and the dependency file it wrote (when the build writes one).
struct EntryExtras {
  CompilerOutput printed;
  std::optional<std::string> depfile;
};

// A failure says which the entry's manifest lacks, or which is damaged.
Result<EntryExtras> entry_extras(const std::string& manifest, bool wants_depfile) {
  Result<Manifest> view = read_manifest(manifest, false);  // checked already
  if (!view) return Failure{view.why()};
  if (!view->diagnostics) return Failure{"no diagnostics field"};
  Result<CompilerOutput> printed = decode_compiler_output(*view->diagnostics);
  if (!printed) return Failure{"its diagnostics: " + printed.why()};
  EntryExtras extras{std::move(*printed), std::nullopt};
  if (!wants_depfile) return extras;
  if (!view->depfile) return Failure{"no depfile field"};
  Result<std::string> depfile = zstd_decompress(*view->depfile, kMaxDepfile);
  if (!depfile) return Failure{"its dependency file: " + depfile.why()};
  extras.depfile = std::move(*depfile);
  return extras;
}

// The dependency file the compiler wrote into the work directory.
std::string written_depfile(const AtomicOutput& out, const std::string& output) {
  // Whole (the entry refuses more than kMaxDepfile; the build still gets it).
  Result<std::string> bytes = read_regular_file_up_to(depfile_in(out), std::size_t(1) << 30);
  if (!bytes)
    throw Error(ErrorKind::compile_failed,
                "compile failed: the compiler exited 0 but wrote no dependency file (" +
                    bytes.why() + ")" + untouched_output(output));
  return std::move(*bytes);
}

// The dependency file written whole where the command names it, before the
// output is (a build tool that sees the output finds its list).
void install_depfile(const std::string& path, const std::string& bytes, const std::string& output) {
  Status written = check_replaceable(path);
  if (written) written = write_file_atomically(path, bytes);
  if (!written)
    throw Error(ErrorKind::output, "cannot write the dependency file " + path + ": " +
                                       written.why() + untouched_output(output));
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
               const std::vector<std::string>& sources, const RunSettings& settings,
               const Environment& env, BuildOutcome& outcome) {
  check_build_files(sources, plan.output);
  ProcessRunner& processes = settings.processes ? *settings.processes : real_processes();
  const Programs programs = find_programs(steps, env);
  // From here until the work directory is removed, an interrupt is taken
  // only while the compiler runs (where it is handled).
  InterruptGuard guard;
  AtomicOutput out(plan.output);

  StorageStack stack(settings.output_cache, settings.remote_cache);
  if (settings.remote_cache && settings.remote_cache->enabled()) {
    outcome.remote_cache = redact_address(settings.remote_cache->settings().url);
    outcome.remote_lease_note = settings.remote_cache->lease_note();
  }
  Storage* storage = settings.storage ? settings.storage : stack.empty() ? nullptr : &stack.top();
  const KeyInput key_in = key_input(plan, steps, sources, programs, settings);
  std::optional<EntryKey> key;
  if (storage) key = look_up(*storage, key_in, plan, settings, env, out, outcome);
  if (key && settings.report_shared_key && key->shared()) outcome.shared_key = *key->shared();
  std::optional<std::string> depfile;
  if (outcome.cache == CacheStatus::hit) {
    Result<EntryExtras> extras = entry_extras(outcome.entry_manifest, !plan.depfile.empty());
    if (extras) {
      outcome.printed = std::move(extras->printed);
      depfile = std::move(extras->depfile);
      replay_compiler_output(outcome.printed, settings.replay_stdout, settings.replay_stderr);
    } else {  // an entry that cannot be given back whole: compile
      outcome.cache = CacheStatus::miss;
      outcome.cache_detail = "its entry's diagnostics or dependency file are damaged";
      outcome.entry_manifest.clear();
      out.discard_result();
    }
  }
  // The lease a miss took, released once stored or when the build fails.
  Released released(outcome.cache == CacheStatus::hit ? nullptr : storage, key);
  if (outcome.cache != CacheStatus::hit) {
    auto start = std::chrono::steady_clock::now();
    outcome.timings.push_back({"compile", 0});  // printed before its steps' "observe"
    std::optional<Observation> observed;
    // With an entry to store, what the compiler reads is hashed as it reads
    // it (early_digests), the link's libraries first guessed.
    std::optional<EarlyDigests> early;
    if (key && std::any_of(steps.begin(), steps.end(), [](const Step& s) { return s.observed; })) {
      early.emplace(*settings.files,
                    settings.output_cache ? settings.output_cache->root() : nullptr,
                    kRememberDigestFrom);
      early->foresee(foreseen_libraries(steps, programs, out));
    }
    try {
      observed = run_steps(plan, steps, programs, out, settings, env, processes, outcome,
                           early ? &*early : nullptr);
    } catch (...) {
      add_timing(outcome, "compile", seconds_since(start) - stage_seconds(outcome, "observe"));
      throw;  // failed builds are timed too
    }
    add_timing(outcome, "compile", seconds_since(start) - stage_seconds(outcome, "observe"));
    Result<UniqueFd> result = out.open_result();
    Status usable =
        result ? check_output_format(result->get(), plan.kind) : Status(Failure{result.why()});
    if (!usable)
      throw Error(ErrorKind::compile_failed,
                  "compile failed: the compiler exited 0 but its output is not usable (" +
                      usable.why() + ")" + untouched_output(plan.output));
    outcome.started = out.started();
    if (!plan.depfile.empty()) depfile = written_depfile(out, plan.output);
    Uncacheable reason = Uncacheable::unobserved;
    if (observed) {
      const auto observing = std::chrono::steady_clock::now();
      if (early) early->finish();
      outcome.observed_manifest = manifest_of(*observed, steps, programs, out, settings, env,
                                              early ? &*early : nullptr, reason);
      add_timing(outcome, "observe", seconds_since(observing));
    }
    if (key) {
      const auto storing = std::chrono::steady_clock::now();
      outcome.uncacheable = reason;  // if there is no manifest
      store(*storage, *key, key_in, result->get(),
            outcome.observed_manifest.value_or(
                Result<std::string>(Failure{"the compiler was not observed"})),
            out, depfile, outcome);
      released.now();  // after the upload: those waiting find the entry
      CounterIncrements counters = storage->take_counters();
      if (outcome.uncacheable)
        for (auto& counter : uncacheable_counters(*outcome.uncacheable))
          counters.push_back(std::move(counter));
      save_counters(settings, counters);
      add_timing(outcome, "store", seconds_since(storing));
    }
  }
  for (const Step& step : steps) {
    if (step.kind != StepKind::load_check) continue;
    const auto start = std::chrono::steady_clock::now();
    outcome.load = check_load(settings.load_check, out.path(),
                              plan.options.values(OptionList::libraries_dirs), env, processes);
    outcome.timings.push_back({"load", seconds_since(start)});
    // The loader names the temporary it loaded; the user knows the output.
    auto as_output = [&](std::string text) {
      const std::string& loaded = out.path();
      for (std::size_t at = 0; !loaded.empty() && (at = text.find(loaded, at)) != text.npos;
           at += plan.output.size())
        text.replace(at, loaded.size(), plan.output);
      for (char& c : text)
        if (c == '\n') c = ';';
      return text;
    };
    outcome.load->only_with_library_path = as_output(outcome.load->only_with_library_path);
    if (!outcome.load->ok) {
      std::string why = as_output(outcome.load->message);
      if (outcome.load->needs_library_path)
        why += "; " + rpath_hint(plan.options.values(OptionList::libraries_dirs));
      else if (!outcome.load->undefined_symbols.empty())
        why += "; " + undefined_symbol_hint(plan.options, outcome.load->undefined_symbols);
      throw Error(ErrorKind::load_failed, "load failed: " + why + untouched_output(plan.output));
    }
  }
  if (depfile) install_depfile(plan.depfile, *depfile, plan.output);
  out.commit();
}

}  // namespace kbuild

namespace kbuild {

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

FailureAnalysis analyze_failure(const std::string& output, bool links) {
  // "file.cpp:12:3: error: ..." or "file.cpp:12: error: ..." from the compiler proper.
  static const std::regex diagnostic(R"(^[^:\s][^:]*:\d+(:\d+)?: (fatal )?error: )");
  static const std::regex missing_lib(R"(cannot find -l([^\s:]+))");
  static const std::regex undefined(R"(undefined reference to [`']([^']+)')");
  // gcc's "fatal error: acc.h: No such file or directory", clang's "'acc.h' file not found".
  static const std::regex missing_header(
      R"(fatal error: (?:([^:']+): No such file or directory|'([^']+)' file not found))");

  FailureAnalysis a;
  bool compile_error = false, link_error = false;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, missing_lib)) {
      link_error = true;
      add_unique(a.missing_libraries, m[1]);
    } else if (std::regex_search(line, m, undefined)) {
      link_error = true;
      add_unique(a.undefined_symbols, m[1]);
    } else if (line.find("collect2: error:") != std::string::npos ||
               line.find("ld returned") != std::string::npos ||
               line.rfind("/usr/bin/ld:", 0) == 0 || line.find(": ld: ") != std::string::npos) {
      link_error = true;
    } else if (std::regex_search(line, diagnostic)) {
      compile_error = true;
      if (std::regex_search(line, m, missing_header))
        add_unique(a.missing_headers, m[1].matched ? m[1] : m[2]);
    } else {
      continue;
    }
    if (a.first_error.empty()) a.first_error = line;
  }
  // A compile error stops the build before any link, so it is the earlier stage.
  a.step = (links && link_error && !compile_error) ? FailedStep::link : FailedStep::compile;
  return a;
}

}  // namespace kbuild

namespace kbuild {

namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// Which provider (and file:line) asked for library `name`.
std::string added_by(const BuildOptions& options, const std::string& name) {
  for (const Entry& e : options.entries(OptionList::libraries)) {
    if (e.value != name) continue;
    return e.origin.describe();
  }
  return "the passthrough or extra flags";
}

// For a header the compile did not find: the include dirs device files
// added, each with its provenance, when none of them holds it (a wrong or
// missing dir in a device file reads like a kernel bug otherwise); "" when
// one does, or when no device file added any.
std::string missing_header_note(const BuildOptions& options, const std::string& header) {
  std::string dirs, files;
  for (const Entry& e : options.entries(OptionList::include_dirs)) {
    if (e.origin.layer != Layer::device || e.origin.file.empty()) continue;
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(e.value) / header, ec)) return "";
    const bool exists = std::filesystem::is_directory(e.value, ec);
    dirs += (dirs.empty() ? "" : ", ") + e.value + " (" + (exists ? "" : "does not exist; ") +
            e.origin.describe() + ")";
    if (files.find(e.origin.file) == std::string::npos)
      files += (files.empty() ? "" : ", ") + e.origin.file;
  }
  if (dirs.empty()) return "";
  return "; " + header + " is in none of the include dirs that device files added: " + dirs +
         "; fix include_dirs in " + files + ", or install the header there";
}

}  // namespace

std::string untouched_output(const std::string& output) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(output, ec)))
    return "; " + output + " left as it was";
  return "; no " + output + " written";
}

Error toolchain_error(const BuildOptions& options, const std::string& output,
                      const ProcessResult& process, const FailureAnalysis& a) {
  const std::string kept = untouched_output(output);
  if (a.step == FailedStep::link) {
    if (!a.missing_libraries.empty()) {
      std::string what;
      for (const std::string& lib : a.missing_libraries)
        what += (what.empty() ? "" : "; ") +
                ("cannot find -l" + lib + " (added by " + added_by(options, lib) + ")");
      std::vector<std::string> dirs = options.values(OptionList::libraries_dirs);
      return Error(ErrorKind::link_failed,
                   "link failed: " + what + "; searched " +
                       (dirs.empty() ? std::string("no -L dirs") : "-L " + join(dirs, ", ")) +
                       " and the system's; fix the library dirs or install the library" + kept);
    }
    if (!a.undefined_symbols.empty())
      return Error(ErrorKind::link_failed,
                   "link failed: undefined reference to '" + a.undefined_symbols.front() + "'" +
                       (a.undefined_symbols.size() > 1
                            ? " and " + std::to_string(a.undefined_symbols.size() - 1) + " more"
                            : std::string()) +
                       "; a library is missing from the link line" + kept);
    return Error(ErrorKind::link_failed,
                 "link failed (" + process.describe() + "): " + a.first_error + kept);
  }
  std::string first = a.first_error.empty() ? std::string() : ": " + a.first_error;
  if (!a.missing_headers.empty()) first += missing_header_note(options, a.missing_headers.front());
  return Error(ErrorKind::compile_failed,
               "compile failed (" + process.describe() + ")" + first + kept);
}

}  // namespace kbuild
