#include "build/compilation.hpp"

#include <chrono>
#include <filesystem>

#include "run/compile_commands.hpp"
#include "util/environment.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// The settings `asked` names, resolved once, and the caches they name: opened
// (made, unless a dry run) before anything, the PCH job included, is
// planned. Says why the cache is off, when it is.
void open_settings(Compilation& c, const Registry* registry, const Environment& env,
                   const FileSystem& files, BuildListener& listener) {
  const BuildRequest& options = c.asked;
  c.settings = resolve_run_settings(c.asked, registry, env);
  c.settings.files = &files;
  OpenedCache opened = OutputCache::open(c.settings.cache, !options.dry_run, files);
  c.cache = std::make_unique<OutputCache>(std::move(opened.cache));
  if (opened.disabled && opened.disabled->warning)
    listener.warnings({opened.disabled->why});
  else if (opened.disabled)
    listener.notes({opened.disabled->why});
  c.settings.output_cache = c.cache.get();
  // Made also for a dry run (it connects only when asked): the PCH is
  // planned as the build with this remote cache plans it.
  if (!c.settings.remote.url.empty()) {
    c.remote = std::make_unique<RemoteCache>(c.settings.remote, nullptr, files);
    c.settings.remote_cache = c.remote.get();
  }
}

// What planning the steps of `plan` needs.
StepInput step_input(const Compilation& c, const BuildPlan& plan, const Environment& env) {
  const BuildRequest& options = c.asked;
  StepInput in;
  in.sources = c.request->sources;
  in.launcher = c.settings.launcher;
  in.observe = options.use_cache && !cache_root(env).empty();
  in.load_check = options.load_check;
  in.required_symbols = options.required_symbols;
  if (in.launcher.resolve_native && in.launcher.split) {
    auto compiler = find_executable(plan.command.argv[0], env);
    if (compiler) in.native_flags = resolve_native_flags(*compiler, env);
  }
  return in;
}

// Where --pch keeps its header and .gch: the cache (also with --no-cache,
// which turns off only the output cache), or nowhere (this build only):
// the directory the plan names (a dry run's future cache) and the one open.
std::pair<std::string, const TrustedDir*> pch_place(Compilation& c, const Environment& env,
                                                    BuildListener& listener) {
  const BuildRequest& options = c.asked;
  const TrustedDir* root = c.cache->root();
  const std::string cache_dir = cache_root(env);
  if (!root && !options.use_cache) {
    Result<TrustedDir> opened = open_cache_root(cache_dir, !options.dry_run);
    if (opened) {
      c.pch_root = std::make_unique<TrustedDir>(std::move(*opened));
      root = c.pch_root.get();
    } else if (!options.dry_run) {
      listener.warnings({opened.why() + "; the precompiled header is built for this build only"});
    }
  }
  std::string dir = root ? root->path() : "";
  // Where the run will keep it: the cache, also when a dry run has not
  // made that directory yet.
  std::error_code ec;
  if (!root && options.dry_run && !fs::exists(cache_dir, ec)) dir = cache_dir;
  return {dir, root};
}

// Plans the PCH job (the kernel then includes what it builds).
void plan_pch_job(Compilation& c, const Session& session, const Environment& env,
                  BuildListener& listener) {
  if (c.asked.include_pch)
    throw Error(ErrorKind::usage, "--pch and --include-pch exclude each other");
  auto [dir, root] = pch_place(c, env, listener);
  // With a remote cache, a .gch recorded without its shared key is built
  // again (a dry run opens none: it plans the reuse).
  const bool shared = c.remote && c.remote->enabled();
  c.pch = plan_pch(*c.request, c.asked.pch, session.registry, session.context(), dir, root,
                   c.settings.launcher, env, shared, session.files);
  c.request->include_pch = c.pch->include;
}

// Plans the build's command and its steps.
void plan_build_steps(Compilation& c, const Session& session, const Environment& env) {
  c.plan = plan_build(*c.request, session.registry, session.context());
  c.steps = plan_steps(*c.plan, step_input(c, *c.plan, env));
}

void plan_into(Compilation& c, Session& session, const Environment& env, BuildListener& listener) {
  c.request = c.asked;
  c.request->profile = session.profile.profile;
  // Every setting first: the PCH job runs with them too, and a dry run
  // refuses what the build would.
  open_settings(c, &session.registry, env, session.files, listener);
  if (!c.asked.pch.empty()) plan_pch_job(c, session, env, listener);
  auto start = std::chrono::steady_clock::now();
  plan_build_steps(c, session, env);
  session.timings.push_back({"resolve", seconds_since(start)});
  c.notes.insert(c.notes.end(), c.plan->notes.begin(), c.plan->notes.end());
  if (c.settings.launcher.distributes && !c.asked.resolve_native)
    c.notes.push_back(c.settings.launcher.name() +
                      " compiles -march=native only on this machine; add "
                      "--resolve-native to send the compile steps to other hosts");
  listener.plan_notes(c.notes);
}

// Runs the PCH job (a hit, local or remote, compiles nothing); a .gch built
// in a private directory renames what the kernel includes, so its steps are
// planned again.
void run_pch_job(Compilation& c, const Environment& env, BuildListener& listener) {
  const Session& session = *c.session;
  const TrustedDir* root = c.cache->root() ? c.cache->root() : c.pch_root.get();
  c.pch = run_pch(*c.pch, root, c.settings, session.registry, session.context(), *c.request, env);
  const PchJob& pch = *c.pch;
  if (pch.kernel_parts) c.settings.remote_parts = *pch.kernel_parts;
  listener.info(std::string("pch: ") + (pch.built ? "built " : "reused ") + pch.include + ".gch" +
                (pch.remote ? " (a remote cache hit)"
                 : pch.hit  ? " (a cache hit)"
                            : ""));
  c.settings.key_extra.push_back("pch " + pch.identity);
  if (pch.include != c.request->include_pch) {
    c.request->include_pch = pch.include;
    plan_build_steps(c, session, env);
  }
}

void say_remote_warning(const Compilation& c, BuildListener& listener) {
  if (c.remote && !c.remote->warning().empty()) listener.warnings({c.remote->warning()});
}

// Passes what a wait for another builder's compile says to `listener` while
// it lives: the start as information (-v), a long wait as a note.
class WaitNotices {
 public:
  WaitNotices(RemoteCache* remote, BuildListener& listener) : remote_(remote) {
    if (remote_)
      remote_->on_wait([&listener](const WaitNotice& notice) {
        if (notice.long_wait)
          listener.notes({notice.line});
        else
          listener.info(notice.line);
      });
  }
  ~WaitNotices() {
    if (remote_) remote_->on_wait(nullptr);
  }
  WaitNotices(const WaitNotices&) = delete;
  WaitNotices& operator=(const WaitNotices&) = delete;

 private:
  RemoteCache* remote_;
};

void run_jobs(Compilation& c, BuildListener& listener, const Environment& env) {
  const bool print_only = c.asked.dry_run;
  WaitNotices notices(c.remote.get(), listener);
  if (c.asked.verbose && c.remote && !print_only)
    listener.info("remote cache: " + redact_address(c.remote->settings().url) + " (from " +
                  c.remote->settings().from + ")" +
                  (c.remote->leases() ? "" : "; " + c.remote->lease_note()));
  if (c.pch && !print_only) run_pch_job(c, env, listener);
  const std::vector<std::string>& sources = c.request->sources;
  // Checked here, before anything is recorded, so a dry run refuses what the build would.
  check_build_files(sources, c.plan->output);
  if (!c.asked.compile_commands.empty())
    if (Status recorded = record_compile_commands(c.asked.compile_commands, c.steps, sources,
                                                  compile_commands_lock_wait(env));
        !recorded)
      c.left_alone_database = recorded.error();
  if (print_only) return;
  run_build(*c.plan, c.steps, sources, c.settings, env, c.outcome);
}

}  // namespace

Compilation plan_compilation(Session& session, BuildRequest request, BuildListener& listener) {
  Compilation c;
  c.session = &session;
  c.asked = std::move(request);
  c.notes = session.site.notes;
  try {
    plan_into(c, session, session.env, listener);
  } catch (const Error& e) {
    c.failure = e;
    c.exit_code = exit_code(e.kind());
  }
  return c;
}

Compilation refused_compilation(BuildRequest asked, const Error& why) {
  Compilation c;
  c.asked = std::move(asked);
  c.failure = why;
  c.exit_code = exit_code(why.kind());
  return c;
}

Compilation compiler_compilation(const CompilerCall& call, const Environment& env,
                                 const FileSystem& files, BuildListener& listener) {
  Compilation c;
  // Resolved as a build's are (the size limit, the remote cache with its
  // signing, read-only, timeout and lease settings), from compiler mode's
  // variables, so that a fleet's routed compiles are kept and shared alike.
  c.asked = compiler_mode_request(env);
  c.asked.sources = call.sources;
  c.request = c.asked;
  c.settings = resolve_run_settings(c.asked, nullptr, env);
  c.settings.files = &files;
  OpenedCache opened = OutputCache::open(c.settings.cache, true, files);
  c.cache = std::make_unique<OutputCache>(std::move(opened.cache));
  // Always a warning here: a compiler's user did not ask for kbuild's notes.
  if (opened.disabled) listener.warnings({opened.disabled->why});
  c.remote = std::make_unique<RemoteCache>(c.settings.remote, nullptr, files);
  c.settings.output_cache = c.cache.get();
  c.settings.remote_cache = c.remote.get();
  c.plan = call.plan;
  StepInput in;
  in.sources = call.sources;
  // A split launcher's link would be assembled anew; the words must stay.
  in.launcher =
      c.settings.launcher.split && links(call.plan.kind) ? Launcher{} : c.settings.launcher;
  in.observe = c.settings.cache.enabled && !c.settings.cache.root.empty();
  c.steps = plan_steps(call.plan, in);
  return c;
}

void run_compilation(Compilation& c, BuildListener& listener, const Environment& env) {
  if (c.failure) throw *c.failure;
  try {
    run_jobs(c, listener, env);
  } catch (const Error& e) {
    say_remote_warning(c, listener);
    c.failure = e;
    c.exit_code = exit_code(e.kind());
    throw;
  }
  say_remote_warning(c, listener);
}

std::vector<std::string> dry_run_lines(const Compilation& c, bool inductor_line) {
  const std::vector<Step>& steps = c.steps;
  std::vector<std::string> lines = c.pch ? pch_lines(*c.pch) : std::vector<std::string>{};
  if (inductor_line) {
    std::size_t commands = 0;
    for (const Step& s : steps) commands += s.kind == StepKind::command;
    if (commands != 1 || !lines.empty() || steps.size() != 1)
      throw Error(ErrorKind::usage, "--inductor-line prints a one-step plan, and this one has " +
                                        std::to_string(steps.size() + lines.size()) +
                                        " steps; drop --inductor-line to see them");
    return {c.plan->command.inductor_line};
  }
  for (std::string& line : step_lines(steps)) lines.push_back(std::move(line));
  return lines;
}

bool compiler_said_why(const Compilation& c) {
  if (!c.failure) return false;
  const ErrorKind kind = c.failure->kind();
  const std::optional<ProcessResult>& process = c.outcome.process;
  return (kind == ErrorKind::compile_failed || kind == ErrorKind::link_failed) && process &&
         process->exited && process->exit_code;
}

}  // namespace kbuild
