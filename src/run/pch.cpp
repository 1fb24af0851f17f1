#include "run/pch.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

#include "kbuild/error.hpp"
#include "run/input_manifest.hpp"
#include "run/output_cache.hpp"
#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/process.hpp"
#include "util/text.hpp"

namespace fs = std::filesystem;

namespace kbuild {

std::string gch_stamp(const TrustedDir& dir, const std::string& name) {
  auto st = dir.status(name);
  if (!st || !S_ISREG(st->st_mode)) return "";
  return std::to_string(st->st_size) + ":" + std::to_string(st->st_mtim.tv_sec) + "." +
         std::to_string(st->st_mtim.tv_nsec) + ":" + std::to_string(st->st_ino);
}

namespace {

constexpr const char* kPrivateDir = "/tmp/kbuild-pch.XXXXXX";

// A directory made by mkdtemp, removed with everything in it.
struct ScratchDir {
  std::string path;
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::shared_ptr<ScratchDir> make_scratch() {
  std::string pattern = kPrivateDir;
  if (::mkdtemp(pattern.data()) == nullptr)
    throw Error(ErrorKind::output, std::string("--pch: cannot make a private directory in /tmp: ") +
                                       std::strerror(errno));
  auto dir = std::make_shared<ScratchDir>();
  dir->path = pattern;
  return dir;
}

// The user's header, read through `files`: a FIFO or a device is "not a
// regular file" and never waited on; a directory is named as the system
// names it ("Is a directory").
Result<std::string> read_header(const FileSystem& files, const std::string& header) {
  const std::optional<struct stat> st = files.status(header);
  if (st && S_ISDIR(st->st_mode)) return Failure{header + ": " + std::strerror(EISDIR)};
  return files.read(header, std::numeric_limits<std::size_t>::max());
}

// The recorded manifest when the .gch can be reused as it is.
std::optional<std::string> reusable(const TrustedDir& dir, const std::string& key,
                                    const Environment& env, const FileSystem& files) {
  Result<std::string> deps = dir.read(key + ".deps", 16u << 20);
  if (!deps) return std::nullopt;
  Result<Manifest> manifest = read_manifest(*deps);
  // The compiler reads both by name: each must be a trusted regular file.
  if (!manifest || !manifest_holds(*manifest, env, files) || !dir.open_file(key + ".h") ||
      !dir.open_file(key + ".h.gch") ||
      manifest->gch.value_or("") != gch_stamp(dir, key + ".h.gch"))
    return std::nullopt;
  return *deps;
}

// The header build: the kernel's flags, precompiling (no link part) the
// header where it lies, so its quoted includes resolve beside it as
// `g++ -include HEADER` resolves them, into `include`.gch, where the
// kernel's -include finds it.
BuildRequest header_request(const BuildRequest& kernel, const std::string& header,
                            const std::string& include) {
  BuildRequest r = kernel;
  r.kind = OutputKind::precompiled_header;
  r.query.compile_only = false;
  r.sources = {header};
  r.output = include + ".gch";
  r.include_pch.reset();
  return r;
}

// The kernels' shared parts (cache_key.hpp: pch_kernel_parts) from the
// header build's .deps (its manifest with the .gch's stamp): its shared
// key and the files the .gch was built from.
std::optional<ShareableParts> kernel_parts(const std::string& deps, const std::string& include) {
  Result<Manifest> manifest = read_manifest(deps);
  if (!manifest || !manifest->remote) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const ManifestInput& input : manifest->inputs)
    inputs.emplace_back(std::string(input.path), std::string(input.digest));
  const std::string shared(*manifest->remote);
  return pch_kernel_parts(shared, inputs, include);
}

// The header build's machine-local parts (cache_key.hpp: pch_header_parts).
ShareableParts header_parts(const PchJob& plan) {
  return pch_header_parts(plan.include, plan.dir, plan.key);
}

// What the .gch was built from: on a hit the entry's manifest, else what the
// header build was observed to read, look for and ask.
Result<std::string> header_manifest(const BuildOutcome& outcome) {
  if (outcome.cache == CacheStatus::hit) {
    if (!read_manifest(outcome.entry_manifest)) return Failure{"the cache entry holds no manifest"};
    return outcome.entry_manifest;
  }
  if (!outcome.observed_manifest) return Failure{"the header build was not observed"};
  return *outcome.observed_manifest;
}

std::vector<Step> header_steps(const BuildPlan& plan, const std::string& source,
                               const Launcher& launcher) {
  StepInput in;
  in.sources = {source};
  in.launcher = launcher;
  in.observe = true;  // a .gch is only reused while what it read is unchanged
  return plan_steps(plan, in);
}

}  // namespace

PchJob plan_pch(const BuildRequest& kernel, const std::string& header, const Registry& registry,
                const ResolveContext& ctx, const std::string& cache_dir, const TrustedDir* cache,
                const Launcher& launcher, const Environment& env, bool shared,
                const FileSystem& files) {
  // The user's header, named in its own words when it is not a file ("Is a directory").
  Result<std::string> bytes = read_header(files, header);
  if (!bytes) throw Error(ErrorKind::input, "cannot read the --pch header " + bytes.why());
  PchJob p;
  p.header = header;
  BuildPlan probe = plan_build(header_request(kernel, header, header), registry, ctx);
  auto compiler = find_executable(probe.command.argv[0], env);
  if (!compiler)
    throw Error(ErrorKind::compiler_missing,
                "compiler '" + probe.command.argv[0] + "' not found or not executable");
  KeyInput key_in;
  key_in.argv = probe.command.argv;
  key_in.output_index = probe.command.output_index;
  key_in.output = probe.output;
  key_in.sources = {header};
  key_in.programs = {*compiler};
  auto key = cache_key(key_in, files);
  if (!key) throw Error(ErrorKind::input, "cannot read the --pch header " + key.why());
  p.key = key->hex;
  std::optional<TrustedDir> dir;
  if (cache)
    if (Result<TrustedDir> pch = cache->sub("pch", false)) dir.emplace(std::move(*pch));
  if (!cache_dir.empty()) p.dir = cache_dir + "/pch";
  p.include = (p.dir.empty() ? std::string(kPrivateDir) : p.dir) + "/" + p.key + ".h";
  if (dir) {
    if (auto deps = reusable(*dir, p.key, env, files)) {
      std::optional<ShareableParts> parts = kernel_parts(*deps, p.include);
      if (parts || !shared) {
        p.reuse = true;
        p.identity = digest_hex(*deps);
        p.kernel_parts = std::move(parts);
        return p;
      }
    }
  }
  p.build = plan_build(header_request(kernel, header, p.include), registry, ctx);
  p.steps = header_steps(p.build, header, launcher);
  return p;
}

std::vector<std::string> pch_lines(const PchJob& plan) {
  if (plan.reuse) return {"# reuse " + plan.include + ".gch (what it was built from is unchanged)"};
  std::vector<std::string> lines{"# copy " + shell_quote(plan.header) + " to " +
                                 shell_quote(plan.include)};
  for (const std::string& line : step_lines(plan.steps)) lines.push_back(line);
  return lines;
}

PchJob run_pch(PchJob job, const TrustedDir* cache, const RunSettings& settings,
               const Registry& registry, const ResolveContext& ctx, const BuildRequest& kernel,
               const Environment& env) {
  if (job.reuse) return job;
  const PchJob& plan = job;
  std::string include = plan.include;
  std::optional<TrustedDir> dir;
  if (cache)
    if (Result<TrustedDir> pch = cache->sub("pch", true)) dir.emplace(std::move(*pch));
  BuildPlan build = plan.build;
  std::vector<Step> steps = plan.steps;
  RunSettings step = settings;
  // A .gch is only reused while what it read is unchanged: observed.
  for (Step& s : steps) s.observed = s.kind == StepKind::command;
  step.remote_parts = header_parts(plan);
  step.report_shared_key = true;
  if (!dir) {
    // No cache to keep it in (or it went away): a private directory, and
    // no storage (its path is this build's alone).
    auto scratch = make_scratch();
    Result<TrustedDir> opened = TrustedDir::open(scratch->path, false);
    if (!opened) throw Error(ErrorKind::output, "--pch: " + opened.why());
    dir.emplace(std::move(*opened));
    job.scratch = scratch;
    include = scratch->path + "/" + plan.key + ".h";
    build = plan_build(header_request(kernel, plan.header, include), registry, ctx);
    steps = header_steps(build, plan.header, settings.launcher);
    step.output_cache = nullptr;
    step.remote_cache = nullptr;
    step.storage = nullptr;
  }
  const std::string name = plan.key + ".h";
  Result<std::string> bytes = read_header(*settings.files, plan.header);
  if (!bytes) throw Error(ErrorKind::input, "cannot read the --pch header " + bytes.why());
  if (Status written = dir->write_atomically(name, *bytes); !written)
    throw Error(ErrorKind::output, "--pch: " + written.why());
  BuildOutcome outcome;
  run_build(build, steps, {plan.header}, step, env, outcome);
  Result<std::string> read = header_manifest(outcome);
  Result<Manifest> manifest = read ? read_manifest(*read) : Result<Manifest>(Failure{read.why()});
  if (!manifest) {
    // Without the manifest of what it read, the .gch could go stale unseen.
    (void)dir->remove_file(name + ".gch");
    throw Error(ErrorKind::compile_failed,
                "--pch: what the header build of " + plan.header + " read is not known (" +
                    manifest.why() +
                    "); build again, or drop --pch for a compiler kbuild cannot observe");
  }
  manifest->compressed = false;  // how the entry keeps its output, not what it read
  manifest->gch = manifest->keep(gch_stamp(*dir, name + ".gch"));
  if (outcome.shared_key) manifest->remote = manifest->keep(*outcome.shared_key);
  const std::string deps = manifest_bytes(*manifest);
  if (Status written = dir->write_atomically(plan.key + ".deps", deps); !written)
    throw Error(ErrorKind::output, "--pch: " + written.why());
  job.include = include;
  job.hit = outcome.cache == CacheStatus::hit;
  job.remote = job.hit && outcome.cache_detail == "remote";
  job.built = !job.hit;
  job.identity = digest_hex(deps);
  job.kernel_parts = kernel_parts(deps, job.include);
  return job;
}

}  // namespace kbuild
