#include "kbuild/compile_commands.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kbuild/file_util.hpp"
#include "kbuild/json_locations.hpp"
#include "kbuild/json_text.hpp"

namespace kbuild {

namespace {

// Holds flock(LOCK_EX) on a lock file for its lifetime.
class FileLock {
 public:
  explicit FileLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

// The file a write to `path` lands in: `path`, or the file its symlink
// (chain) names, so the link is kept, not replaced by a copy.
std::string write_target(const std::string& path, std::string& error) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) {
    error = path + " is a symlink that cannot be followed (" + std::strerror(errno) +
            "); fix or remove the link";
    return "";
  }
  std::string target = real;
  std::free(real);
  return target;
}

// Whether `entry` (checked by read_database) is the command for (source, output).
bool same_command(const nlohmann::ordered_json& entry, const std::string& source,
                  const std::string& output) {
  return entry.value("file", "") == source && entry.value("output", "") == output;
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

CompileCommandsUpdate update_compile_commands(const std::string& path, const std::string& directory,
                                              const std::vector<std::string>& argv,
                                              const std::vector<std::string>& sources,
                                              const std::string& output) {
  std::string error;
  const std::string target = write_target(path, error);
  if (!error.empty()) return {error};
  if (std::string problem = check_replaceable(target); !problem.empty()) return {problem};
  FileLock lock(target + ".lock");
  if (!lock.held()) return {"cannot lock " + target + ".lock: " + std::strerror(errno)};
  nlohmann::ordered_json db;
  if (std::string foreign = read_database(target, db); !foreign.empty()) return {foreign, true};
  for (const std::string& source : sources) {
    nlohmann::ordered_json entry{
        {"directory", directory}, {"arguments", argv}, {"file", source}, {"output", output}};
    bool replaced = false;
    for (auto& old : db) {
      if (same_command(old, source, output)) {
        old = entry;
        replaced = true;
      }
    }
    if (!replaced) db.push_back(entry);
  }
  return {write_file_atomically(target, dump_json(db, 2) + "\n")};
}

}  // namespace kbuild
