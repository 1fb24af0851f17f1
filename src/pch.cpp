#include "kbuild/pch.hpp"

#include <filesystem>

#include "kbuild/error.hpp"
#include "kbuild/file_util.hpp"
#include "kbuild/output_cache.hpp"
#include "kbuild/process.hpp"

namespace fs = std::filesystem;

namespace kbuild {

PchResult prepare_pch(const BuildRequest& kernel, const std::string& header,
                      const Registry& registry, const ResolveContext& ctx,
                      const std::string& cache_root, const BuildSettings& settings,
                      const Environment& env) {
  auto bytes = read_whole_file(header);
  if (!bytes) throw Error(ErrorKind::input, "--pch header " + header + " cannot be read");
  // The header step: the kernel's flags, precompiling (no link part).
  BuildRequest r = kernel;
  r.kind = OutputKind::precompiled_header;
  r.query.compile_only = false;
  r.sources = {header};
  r.output = header + ".gch";
  r.include_pch.reset();
  BuildPlan probe = plan_build(r, registry, ctx);
  auto compiler = find_executable(probe.command.argv[0], env);
  if (!compiler)
    throw Error(ErrorKind::compiler_missing,
                "compiler '" + probe.command.argv[0] + "' not found or not executable");
  CacheSettings cs;
  cs.root = cache_root;
  auto key = OutputCache(cs).key(probe, {header}, *compiler, env);
  if (!key) throw Error(ErrorKind::input, "--pch header " + header + " cannot be read");

  const std::string dir = cache_root + "/pch";
  const std::string copy = dir + "/" + *key + ".h", gch = copy + ".gch";
  const std::string deps = dir + "/" + *key + ".deps.json";
  if (fs::exists(gch) && fs::exists(copy)) {
    auto manifest = read_whole_file(deps);
    if (manifest && inputs_unchanged(*manifest)) return {copy, false};
  }
  std::string err = write_file_atomically(copy, *bytes);
  if (!err.empty()) throw Error(ErrorKind::output, "--pch: " + err);
  r.sources = {copy};
  r.output = gch;
  BuildPlan plan = plan_build(r, registry, ctx);
  BuildSettings step = settings;
  step.cache = nullptr;  // the .gch lives in the pch directory, keyed the same way
  step.load_check.enabled = false;
  step.depfile = dir + "/" + *key + ".d";
  BuildOutcome outcome;
  run_build(plan, {copy}, step, env, outcome);
  auto depfile = read_whole_file(step.depfile);
  std::error_code ec;
  fs::remove(step.depfile, ec);
  auto manifest = input_manifest(depfile.value_or(""));
  if (!depfile || !manifest) {
    // Without the list of what it read, the .gch could go stale unseen.
    fs::remove(gch, ec);
    throw Error(ErrorKind::compile_failed,
                "--pch: the compiler did not list the files " + header +
                    " reads (it must honour SUNPRO_DEPENDENCIES, as g++ does)");
  }
  err = write_file_atomically(deps, *manifest);
  if (!err.empty()) throw Error(ErrorKind::output, "--pch: " + err);
  return {copy, true};
}

}  // namespace kbuild
