// A file system held in memory on a clock that moves only when a test says
// so (util/file_system.hpp), installed as file_system() for its lifetime:
// stamps, staleness and settling are tested without real directories or
// sleeping. Paths are absolute ("/" is the working directory of a relative
// one); writing a file makes its directories; a link names another path.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/file_system.hpp"

namespace kbuild_test {

class FakeFileSystem : public kbuild::FileSystem {
 public:
  // The clock starts at an arbitrary fixed time; the settle age is the builds'.
  explicit FakeFileSystem(std::chrono::nanoseconds settle_age = std::chrono::seconds(2))
      : FileSystem(settle_age), installed_(*this) {
    nodes_["/"] = node(S_IFDIR | 0755);
  }

  // Writes `text` at `path`, making its directories; a new file gets a new
  // inode, an existing one keeps its own. Modified and changed now.
  void write(const std::string& path, const std::string& text) {
    const std::string at = entry_in(path);
    auto it = nodes_.find(at);
    if (it == nodes_.end()) it = nodes_.emplace(at, node(S_IFREG | 0644)).first;
    it->second.bytes = text;
    it->second.mtime = it->second.ctime = now_;
  }
  void make_directories(const std::string& path) {
    std::string at = "/";
    for (const std::string& part : parts(path)) {
      at = join(at, part);
      if (!nodes_.count(at)) nodes_.emplace(at, node(S_IFDIR | 0755));
    }
  }
  // A link at `path` naming `target` (absolute, or relative to its directory).
  void symlink(const std::string& path, const std::string& target) {
    Node& link = nodes_.emplace(entry_in(path), node(S_IFLNK | 0777)).first->second;
    link.target = target;
  }
  // Removes `path` and whatever is below it (a link itself, not its target).
  void remove(const std::string& path) {
    const std::string at = entry_in(path);
    for (auto it = nodes_.begin(); it != nodes_.end();)
      it = it->first == at || it->first.rfind(at + "/", 0) == 0 ? nodes_.erase(it) : std::next(it);
  }
  // Dates the file's modification (touch -d); its change time becomes now.
  void set_mtime(const std::string& path, struct timespec mtime) {
    Node& n = existing(path);
    n.mtime = mtime;
    n.ctime = now_;
  }

  // Time passes, or is set (the clock may go back, as a system clock can).
  void advance(std::chrono::nanoseconds by) { now_ = plus(now_, by); }
  void set_now(struct timespec at) { now_ = at; }
  struct timespec now() const override {
    return now_;
  }

  std::optional<struct stat> status(const std::string& path) const override {
    std::optional<std::string> at = real_path(path);
    if (!at) {
      errno = ENOENT;  // as stat(2) says it
      return std::nullopt;
    }
    const Node& n = nodes_.at(*at);
    struct stat st {};
    st.st_dev = kDevice;
    st.st_ino = n.inode;
    st.st_mode = n.mode;
    st.st_nlink = 1;
    st.st_uid = ::geteuid();
    st.st_gid = ::getegid();
    st.st_size = static_cast<off_t>(n.bytes.size());
    st.st_mtim = n.mtime;
    st.st_ctim = n.ctime;
    st.st_atim = n.mtime;
    return st;
  }
  kbuild::Result<std::string> read(const std::string& path, std::size_t limit) const override {
    std::optional<std::string> at = real_path(path);
    if (!at) return kbuild::Failure{path + ": " + std::strerror(ENOENT)};
    const Node& n = nodes_.at(*at);
    if (!S_ISREG(n.mode)) return kbuild::Failure{path + ": not a regular file"};
    return n.bytes.substr(0, limit);
  }
  kbuild::Result<std::vector<std::string>> list(const std::string& path) const override {
    std::optional<std::string> at = real_path(path);
    if (!at) return kbuild::Failure{path + ": " + std::strerror(ENOENT)};
    if (!S_ISDIR(nodes_.at(*at).mode)) return kbuild::Failure{path + ": " + std::strerror(ENOTDIR)};
    const std::string prefix = *at == "/" ? "/" : *at + "/";
    std::vector<std::string> names;  // in the map's order: sorted by name
    for (auto it = nodes_.upper_bound(prefix); it != nodes_.end(); ++it) {
      if (it->first.rfind(prefix, 0) != 0) break;
      const std::string name = it->first.substr(prefix.size());
      if (name.find('/') == std::string::npos) names.push_back(name);
    }
    return names;
  }
  // Resolves part by part, as the kernel does: a link's target replaces
  // it, and ".." goes up from where the links led.
  std::optional<std::string> real_path(const std::string& path) const override {
    std::vector<std::string> todo = parts(path);
    std::reverse(todo.begin(), todo.end());
    std::string at = "/";
    for (int links = 0; !todo.empty();) {
      const std::string part = todo.back();
      todo.pop_back();
      if (part == "..") {
        at = at == "/" ? "/" : at.substr(0, std::max<std::size_t>(at.rfind('/'), 1));
        continue;
      }
      const std::string next = join(at, part);
      auto it = nodes_.find(next);
      if (it == nodes_.end()) return std::nullopt;
      if (S_ISLNK(it->second.mode)) {
        if (++links > 40) return std::nullopt;  // ELOOP
        std::vector<std::string> target = parts(it->second.target);
        todo.insert(todo.end(), target.rbegin(), target.rend());
        if (it->second.target.rfind('/', 0) == 0) at = "/";
        continue;
      }
      if (!S_ISDIR(it->second.mode) && !todo.empty()) return std::nullopt;  // ENOTDIR
      at = next;
    }
    return at;
  }

 private:
  static constexpr dev_t kDevice = 0xfa4e;
  struct Node {
    mode_t mode = 0;
    ino_t inode = 0;
    std::string bytes, target;
    struct timespec mtime {
    }, ctime{};
  };

  Node node(mode_t mode) {
    Node n;
    n.mode = mode;
    n.inode = next_inode_++;
    n.mtime = n.ctime = now_;
    return n;
  }
  // The key of `path`'s own entry: its directory resolved (made when
  // missing), then its name.
  std::string entry_in(const std::string& path) {
    std::vector<std::string> names = parts(path);
    if (names.empty()) return "/";
    const std::string name = names.back();
    names.pop_back();
    std::string dir = "/";
    for (const std::string& part : names) dir = join(dir, part);
    make_directories(dir);
    return join(*real_path(dir), name);
  }
  Node& existing(const std::string& path) {
    std::optional<std::string> at = real_path(path);
    if (!at) throw std::runtime_error("no file " + path + " in the fake file system");
    return nodes_.at(*at);
  }
  // The names in `path`, without empty ones and ".".
  static std::vector<std::string> parts(const std::string& path) {
    std::vector<std::string> out;
    std::size_t from = 0;
    while (from <= path.size()) {
      std::size_t to = path.find('/', from);
      if (to == std::string::npos) to = path.size();
      std::string part = path.substr(from, to - from);
      if (!part.empty() && part != ".") out.push_back(std::move(part));
      from = to + 1;
    }
    return out;
  }
  static std::string join(const std::string& dir, const std::string& name) {
    return dir == "/" ? "/" + name : dir + "/" + name;
  }
  static struct timespec plus(struct timespec t, std::chrono::nanoseconds by) {
    const auto total = std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec) + by;
    const auto seconds = std::chrono::floor<std::chrono::seconds>(total);
    t.tv_sec = static_cast<time_t>(seconds.count());
    t.tv_nsec = static_cast<long>((total - seconds).count());
    return t;
  }

  std::map<std::string, Node> nodes_;
  ino_t next_inode_ = 2;
  struct timespec now_ {
    1'700'000'000, 0
  };
  kbuild::ScopedFileSystem installed_;
};

}  // namespace kbuild_test
