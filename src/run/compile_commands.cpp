#include "run/compile_commands.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file_system.hpp"
#include "util/json.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

// The file a write to `path` lands in: `path`, or the file its symlink
// (chain) names, so the link is kept, not replaced by a copy.
Result<std::string> write_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real)
    return Failure{path + " is a symlink that cannot be followed (" + std::strerror(errno) +
                   "); fix or remove the link"};
  std::string target = real;
  std::free(real);
  return target;
}

// `path` as an absolute, normalised path, a relative one taken from
// `directory`: "k.cpp", "./k.cpp" and "/w/k.cpp" are one file.
std::string absolute_in(const std::string& directory, const std::string& path) {
  if (path.empty()) return path;
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(directory) / p;
  return p.lexically_normal().string();
}

// Whether `entry` (checked by read_database) is the command for (source,
// output), both absolute, however the entry spelled them.
bool same_command(const nlohmann::ordered_json& entry, const std::string& source,
                  const std::string& output) {
  const std::string directory =
      entry.contains("directory") && entry["directory"].is_string() ? entry["directory"] : "";
  return absolute_in(directory, entry.value("file", "")) == source &&
         absolute_in(directory, entry.value("output", "")) == output;
}

// The database's entries, or why it is not a database kbuild may edit.
std::string read_database(const std::string& path, nlohmann::ordered_json& db) {
  db = nlohmann::ordered_json::array();
  auto text = read_whole_file(path);
  if (!text || text->empty()) return "";
  try {
    db = parse_ordered_json_text(*text);
  } catch (const JsonSyntaxError& e) {
    return path + " is not valid JSON (" + e.what() + "); left as it is";
  }
  if (!db.is_array()) return path + " is not a JSON array; left as it is";
  for (std::size_t i = 0; i < db.size(); ++i) {
    const auto& entry = db[i];
    if (!entry.is_object() || !entry.contains("file") || !entry["file"].is_string() ||
        (entry.contains("output") && !entry["output"].is_string()))
      return path + ": entry " + std::to_string(i) +
             " is not a compile command (file, output: strings); left as it is";
  }
  return "";
}

}  // namespace

Result<DatabaseUpdate> update_compile_commands(const std::string& path,
                                               const std::string& directory,
                                               const std::vector<std::string>& argv,
                                               const std::vector<std::string>& sources,
                                               const std::string& output) {
  const Result<std::string> resolved = write_target(path);
  if (!resolved) return Failure{resolved.why()};
  const std::string& target = *resolved;
  if (Status replaceable = check_replaceable(target); !replaceable)
    return Failure{replaceable.why()};
  // Never through a symlink: another user's link would have kbuild create
  // and lock a file of their choosing.
  const UniqueFd lock = lock_file(AT_FDCWD, target + ".lock", false);
  if (!lock.valid())
    return Failure{"cannot lock " + target + ".lock: " + std::strerror(errno) +
                   (errno == ELOOP ? " (it is a symlink; remove it)" : "")};
  nlohmann::ordered_json db;
  if (std::string foreign = read_database(target, db); !foreign.empty())
    return DatabaseUpdate{foreign};
  const std::string absolute_output = absolute_in(directory, output);
  for (const std::string& spelled : sources) {
    const std::string source = absolute_in(directory, spelled);
    nlohmann::ordered_json entry{{"directory", directory},
                                 {"arguments", argv},
                                 {"file", source},
                                 {"output", absolute_output}};
    bool replaced = false;
    for (auto& old : db) {
      if (same_command(old, source, absolute_output)) {
        old = entry;
        replaced = true;
      }
    }
    if (!replaced) db.push_back(entry);
    // An earlier run may have added the same entry more than once.
    bool kept = false;
    db.erase(std::remove_if(db.begin(), db.end(),
                            [&](const nlohmann::ordered_json& e) {
                              if (!same_command(e, source, absolute_output)) return false;
                              if (!kept) return kept = true, false;
                              return true;
                            }),
             db.end());
  }
  Status written = write_file_atomically(target, dump_json(db, 2) + "\n");
  if (!written) return Failure{written.why()};
  return DatabaseUpdate{};
}

std::optional<Error> record_compile_commands(const std::string& database,
                                             const std::vector<Step>& steps,
                                             const std::vector<std::string>& sources) {
  // Only a split build has more than one command (the load check is none).
  const auto commands = std::count_if(steps.begin(), steps.end(),
                                      [](const Step& s) { return s.kind == StepKind::command; });
  for (const Step& step : steps) {
    if (step.kind != StepKind::command || (step.links && step.source.empty() && commands > 1))
      continue;  // a split build's link compiles nothing
    std::vector<std::string> step_sources =
        step.source.empty() ? sources : std::vector<std::string>{step.source};
    Result<DatabaseUpdate> update =
        update_compile_commands(database, std::filesystem::current_path().string(), step.argv,
                                step_sources, step.argv[step.output_index]);
    if (!update) throw Error(ErrorKind::output, "--compile-commands: " + update.why());
    if (!update->left_alone.empty())
      return Error(ErrorKind::output, "--compile-commands: " + update->left_alone);
  }
  return std::nullopt;
}

}  // namespace kbuild
