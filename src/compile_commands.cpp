#include "kbuild/compile_commands.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kbuild/file_util.hpp"

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

}  // namespace

std::string update_compile_commands(const std::string& path, const std::string& directory,
                                    const std::vector<std::string>& argv,
                                    const std::vector<std::string>& sources,
                                    const std::string& output) {
  FileLock lock(path + ".lock");
  if (!lock.held()) return "cannot lock " + path + ".lock: " + std::strerror(errno);
  nlohmann::ordered_json db = nlohmann::ordered_json::array();
  if (auto text = read_whole_file(path); text && !text->empty()) {
    try {
      db = nlohmann::ordered_json::parse(*text);
    } catch (const nlohmann::json::exception& e) {
      return path + " is not valid JSON (" + std::string(e.what()) + "); left as it is";
    }
    if (!db.is_array()) return path + " is not a JSON array; left as it is";
  }
  for (const std::string& source : sources) {
    nlohmann::ordered_json entry{
        {"directory", directory}, {"arguments", argv}, {"file", source}, {"output", output}};
    bool replaced = false;
    for (auto& old : db) {
      if (old.is_object() && old.value("file", "") == source && old.value("output", "") == output) {
        old = entry;
        replaced = true;
      }
    }
    if (!replaced) db.push_back(entry);
  }
  return write_file_atomically(path, db.dump(2) + "\n");
}

}  // namespace kbuild
