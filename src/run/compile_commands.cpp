#include "run/compile_commands.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/file_system.hpp"
#include "util/json.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

// Why the link `link` (lstat `link_st`) in the directory `dir` must not be
// followed: the kernel's protected_symlinks rule (which may be off, and
// which realpath() never applies). A link in a sticky, world-writable
// directory (/tmp) is followed only when you, root or the directory's owner
// made it: another user's link there would have kbuild write where they
// choose, even inside a directory they cannot read.
Status may_follow(const std::string& link, const struct stat& link_st, const std::string& dir) {
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0) return ok();
  const bool shared_sticky = (dir_st.st_mode & S_ISVTX) && (dir_st.st_mode & S_IWOTH);
  const uid_t me = ::geteuid();
  if (!shared_sticky || link_st.st_uid == me || link_st.st_uid == 0 ||
      link_st.st_uid == dir_st.st_uid)
    return ok();
  return Failure{link + " is a symlink of uid " + std::to_string(link_st.st_uid) + " in " + dir +
                 ", a sticky directory of uid " + std::to_string(dir_st.st_uid) +
                 "; refusing to follow it (as the kernel's protected_symlinks does): name the "
                 "file it points to, or remove the link"};
}

// The file a write to `path` lands in: `path`, or the file its symlinks
// (in the file's name or in a directory's) name, so the link is kept, not
// replaced by a copy. Resolved one link at a time, each one followed only
// as may_follow() allows.
Result<std::string> write_target(const std::string& path) {
  std::vector<std::string> pending;  // the parts still to walk, the next one last
  auto push = [&pending](const std::string& text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t slash = std::min(text.find('/', start), text.size());
      parts.push_back(text.substr(start, slash - start));
      start = slash + 1;
    }
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  };
  push(path[0] == '/' ? path : std::filesystem::current_path().string() + "/" + path);
  std::string resolved;  // "" is "/"
  bool followed = false;
  int links = 0;
  while (!pending.empty()) {
    const std::string part = std::move(pending.back());
    pending.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      resolved.erase(std::min(resolved.rfind('/'), resolved.size()));
      continue;
    }
    const std::string next = resolved + "/" + part;
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      // As realpath(): what a link names must exist.
      if (followed)
        return Failure{path + " is a symlink that cannot be followed (" + std::strerror(errno) +
                       "); fix or remove the link"};
      resolved = next;
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      resolved = next;
      continue;
    }
    if (++links > 40) return Failure{path + ": too many levels of symbolic links"};
    if (Status allowed = may_follow(next, st, resolved.empty() ? "/" : resolved); !allowed)
      return Failure{allowed.why()};
    std::string target(static_cast<std::size_t>(PATH_MAX), '\0');
    ssize_t size = ::readlink(next.c_str(), target.data(), target.size());
    if (size < 0)
      return Failure{path + " is a symlink that cannot be followed (" + std::strerror(errno) +
                     "); fix or remove the link"};
    target.resize(static_cast<std::size_t>(size));
    if (!target.empty() && target[0] == '/') resolved.clear();
    push(target);
    followed = true;
  }
  if (!followed) return path;
  return resolved.empty() ? std::string("/") : resolved;
}

// An exclusive lock on `lock_path`, waited for until `wait` has passed. The
// lock is created when missing, never through a link; one that is not a
// regular file, or that another user owns (who could hold it for ever, or
// have planted it), is refused.
Result<UniqueFd> lock_database(const std::string& lock_path, std::chrono::milliseconds wait) {
  UniqueFd fd(
      ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!fd.valid())
    return Failure{"cannot lock " + lock_path + ": " + std::strerror(errno) +
                   (errno == ELOOP ? " (it is a symlink; remove it)" : "")};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Failure{"cannot lock " + lock_path + ": not a regular file; remove it"};
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return Failure{"lock " + lock_path + " is owned by uid " + std::to_string(st.st_uid) +
                   ", not by you or root; refusing to use it: remove it"};
  const auto deadline = std::chrono::steady_clock::now() + wait;
  auto pause = std::chrono::milliseconds(5);
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK)
      return Failure{"cannot lock " + lock_path + ": " + std::strerror(errno)};
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return Failure{"waited " + std::to_string(wait.count()) + " ms for the lock " + lock_path +
                     ", which another process holds; end it (or remove the lock if none "
                     "should hold it), or raise KBUILD_COMPILE_COMMANDS_LOCK_TIMEOUT_MS"};
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  return fd;
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
                                               const std::string& output,
                                               std::chrono::milliseconds lock_wait) {
  const Result<std::string> resolved = write_target(path);
  if (!resolved) return Failure{resolved.why()};
  const std::string& target = *resolved;
  if (Status replaceable = check_replaceable(target); !replaceable)
    return Failure{replaceable.why()};
  // Never through a symlink: another user's link would have kbuild create
  // and lock a file of their choosing.
  const Result<UniqueFd> lock = lock_database(target + ".lock", lock_wait);
  if (!lock) return Failure{lock.why()};
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

std::chrono::milliseconds compile_commands_lock_wait(const Environment& env) {
  constexpr std::uint64_t kMaxMs = 86400000;
  auto text = env.get_nonempty("KBUILD_COMPILE_COMMANDS_LOCK_TIMEOUT_MS");
  if (!text) return kCompileCommandsLockWait;
  std::uint64_t ms = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), ms);
  if (ec != std::errc() || end != text->data() + text->size() || ms == 0 || ms > kMaxMs)
    throw Error(ErrorKind::usage, "KBUILD_COMPILE_COMMANDS_LOCK_TIMEOUT_MS: '" + *text +
                                      "' is not a number of milliseconds above 0 (at most " +
                                      std::to_string(kMaxMs) + "); fix or unset it");
  return std::chrono::milliseconds(ms);
}

Status record_compile_commands(const std::string& database, const std::vector<Step>& steps,
                               const std::vector<std::string>& sources,
                               std::chrono::milliseconds lock_wait) {
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
                                step_sources, step.argv[step.output_index], lock_wait);
    if (!update) throw Error(ErrorKind::output, "--compile-commands: " + update.why());
    if (!update->left_alone.empty())
      return Failure{"--compile-commands: " + update->left_alone, ErrorKind::output};
  }
  return ok();
}

}  // namespace kbuild
