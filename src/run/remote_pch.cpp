#include "kbuild/remote_pch.hpp"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "kbuild/file_util.hpp"
#include "kbuild/output_cache.hpp"
#include "kbuild/process.hpp"
#include "kbuild/signing.hpp"
#include "run/input_manifest.hpp"

namespace kbuild {

namespace {

std::optional<std::string> header_build_key(const PchPlan& plan, const Environment& env,
                                            const TrustedDir& cache) {
  if (plan.dir.empty() || plan.steps.empty()) return std::nullopt;
  KeyInput in;
  for (const Step& s : plan.steps) {
    if (s.kind != StepKind::command) continue;
    in.argv.insert(in.argv.end(), s.argv.begin(), s.argv.end());
    in.argv.emplace_back("<next step>");
    if (in.programs.empty()) {  // the compiler, then the launcher (as build_runner.cpp)
      auto compiler = find_executable(s.argv[s.compiler_index], env);
      auto launcher = s.compiler_index > 0 ? find_executable(s.argv[0], env) : std::nullopt;
      if (!compiler || (s.compiler_index > 0 && !launcher)) return std::nullopt;
      in.programs.push_back(*compiler);
      if (launcher) in.programs.push_back(*launcher);
    }
  }
  in.output_index = in.argv.size();
  in.output = plan.include + ".gch";
  in.sources = {plan.header};  // its bytes are what the copy holds
  // The copy's place (this machine's cache, named by its local key).
  ShareableParts parts;
  parts.rewrites = {{plan.include, "<pch>"}, {plan.dir, "<pch-dir>"}, {plan.key, "<pch-key>"}};
  parts.extra = {"pch-header-build"};
  return shareable_key(in, env, parts, &cache);
}

}  // namespace

std::optional<std::string> remote_pch_key(const PchPlan& plan, const Environment& env,
                                          const TrustedDir& cache) {
  // A reused .gch has no planned build to key: its key was recorded beside
  // it when it was built or fetched.
  const std::string record = plan.key + ".remote";
  Result<TrustedDir> dir = cache.sub("pch", !plan.reuse);
  if (!dir) return std::nullopt;
  if (plan.reuse) {
    Result<std::string> key = dir->read(record, 256);
    if (!key || key->size() != 64) return std::nullopt;
    return *key;
  }
  std::optional<std::string> key = header_build_key(plan, env, cache);
  if (key) (void)dir->write_atomically(record, *key);
  return key;
}

bool fetch_remote_pch(RemoteCache& remote, const PchPlan& plan, const std::string& remote_key,
                      const TrustedDir& cache) {
  std::optional<RemoteBlob> blob = remote.get(remote_key);
  // Built from other headers than this machine has: a miss.
  bool usable = false;
  nlohmann::json record;
  if (blob && inputs_unchanged(blob->manifest)) {
    try {
      record = nlohmann::json::from_cbor(blob->manifest);
      usable = record.is_object();
    } catch (const nlohmann::json::exception&) {
    }
  }
  auto header = usable ? read_whole_file(plan.header) : std::nullopt;
  Result<TrustedDir> dir = header ? cache.sub("pch", true) : Result<TrustedDir>(Failure{""});
  const bool hit = static_cast<bool>(dir);
  remote.count(hit);
  if (!hit) return false;
  // The copy, then the .gch, then the record with this .gch's stamp: pch.cpp
  // reuses a .gch only when all three are there and the stamp matches.
  const std::string name = plan.key + ".h";
  if (!dir->write_atomically(name, *header) || !dir->write_atomically(name + ".gch", blob->bytes))
    return false;
  record["gch"] = gch_stamp(*dir, name + ".gch");
  return static_cast<bool>(dir->write_atomically(plan.key + ".deps", to_cbor(record)));
}

void store_remote_pch(RemoteCache& remote, const PchPlan& plan, const std::string& remote_key,
                      const TrustedDir& cache) {
  Result<TrustedDir> dir = cache.sub("pch", false);
  if (!dir || !remote.writable()) return;
  Result<std::string> deps = dir->read(plan.key + ".deps", 16u << 20);
  Result<std::string> gch = dir->read(plan.key + ".h.gch", 1u << 30);
  if (!deps || !gch) return;
  remote.put(remote_key, {std::move(*deps), std::move(*gch)});
}

std::optional<ShareableParts> remote_pch_parts(const PchPlan& plan, const std::string& remote_key,
                                               const std::string& include,
                                               const TrustedDir& cache) {
  Result<TrustedDir> dir = cache.sub("pch", false);
  Result<std::string> deps =
      dir ? dir->read(plan.key + ".deps", 16u << 20) : Result<std::string>(Failure{dir.why()});
  if (!deps) return std::nullopt;
  // The files the .gch was built from, by path and content (not stamps).
  std::string inputs;
  try {
    // Named: a range-for over from_cbor(...).at(...) would walk a destroyed
    // temporary.
    const nlohmann::json record = nlohmann::json::from_cbor(*deps);
    for (const auto& input : record.at("inputs"))
      inputs += input.at(0).get<std::string>() + "\n" + input.at(3).get<std::string>() + "\n";
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  ShareableParts parts;
  parts.extra = {"pch " + remote_key + " " + to_hex(content_hash(inputs))};
  parts.rewrites = {{include, "<pch>"}};
  return parts;
}

}  // namespace kbuild
