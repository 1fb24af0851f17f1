// A file system held in memory on a clock that moves only when a test says
// so (util/file_system.hpp), passed where a FileSystem is taken: stamps,
// staleness, settling and a hit's checks are tested without real
// directories or sleeping. Paths are absolute ("/" is the working directory of a relative
// one); writing a file makes its directories; a link names another path.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
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
      : FileSystem(settle_age) {
    nodes_["/"] = node(S_IFDIR | 0755);
  }

  // Writes `text` at `path`, making its directories; a new file gets a new
  // inode, an existing one keeps its own. Modified and changed now.
  void write(const std::string& path, const std::string& text) {
    const std::string at = entry_in(path);
    auto it = nodes_.find(at);
    if (it == nodes_.end()) {
      it = nodes_.emplace(at, node(S_IFREG | 0644)).first;
      changed_directory_of(at);
    }
    it->second.bytes = text;
    it->second.mtime = it->second.ctime = now_;
  }
  void make_directories(const std::string& path) {
    std::string at = "/";
    for (const std::string& part : parts(path)) {
      at = join(at, part);
      if (!nodes_.count(at)) {
        nodes_.emplace(at, node(S_IFDIR | 0755));
        changed_directory_of(at);
      }
    }
  }
  // A link at `path` naming `target` (absolute, or relative to its directory).
  void symlink(const std::string& path, const std::string& target) {
    const std::string at = entry_in(path);
    Node& link = nodes_.emplace(at, node(S_IFLNK | 0777)).first->second;
    link.target = target;
    changed_directory_of(at);
  }
  // Removes `path` and whatever is below it (a link itself, not its target).
  void remove(const std::string& path) {
    const std::string at = entry_in(path);
    for (auto it = nodes_.begin(); it != nodes_.end();)
      it = it->first == at || it->first.rfind(at + "/", 0) == 0 ? nodes_.erase(it) : std::next(it);
    changed_directory_of(at);
  }
  // Dates the file's modification (touch -d); its change time becomes now.
  void set_mtime(const std::string& path, struct timespec mtime) {
    Node& n = existing(path);
    n.mtime = mtime;
    n.ctime = now_;
  }

  // Who owns it and its mode bits (chown, chmod); an extended attribute
  // (an ACL's bytes, setfacl).
  void set_owner(const std::string& path, uid_t uid, gid_t gid) {
    Node& n = existing(path);
    n.uid = uid;
    n.gid = gid;
    n.ctime = now_;
  }
  void set_mode(const std::string& path, mode_t mode) {
    Node& n = existing(path);
    n.mode = (n.mode & S_IFMT) | (mode & 07777);
    n.ctime = now_;
  }
  void set_attribute(const std::string& path, const std::string& name, const std::string& bytes) {
    existing(path).attributes[name] = bytes;
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
    return stat_of(nodes_.at(*at));
  }
  // The entry itself: its directory resolved, its last part not followed.
  std::optional<struct stat> link_status(const std::string& path) const override {
    const Node* n = entry(path);
    if (!n) {
      errno = ENOENT;
      return std::nullopt;
    }
    return stat_of(*n);
  }
  kbuild::Result<std::string> read_link(const std::string& path) const override {
    const Node* n = entry(path);
    if (!n) return kbuild::Failure{path + ": " + std::strerror(ENOENT)};
    if (!S_ISLNK(n->mode)) return kbuild::Failure{path + ": " + std::strerror(EINVAL)};
    return n->target;
  }
  // A snapshot of the file's bytes and stat (the fake's files change only
  // when a test writes them, never during a read).
  kbuild::Result<std::unique_ptr<kbuild::OpenFile>> open(const std::string& path) const override {
    std::optional<std::string> at = real_path(path);
    if (!at) return kbuild::Failure{path + ": " + std::strerror(ENOENT)};
    const Node& n = nodes_.at(*at);
    if (!S_ISREG(n.mode)) return kbuild::Failure{path + ": not a regular file"};
    struct Opened : kbuild::OpenFile {
      std::string bytes;
      struct stat st {};
      std::optional<struct stat> status() const override { return st; }
      kbuild::Result<std::size_t> read_at(char* into, std::size_t size,
                                          std::uint64_t offset) const override {
        if (offset >= bytes.size()) return std::size_t{0};
        const std::size_t n = std::min<std::size_t>(size, bytes.size() - offset);
        std::memcpy(into, bytes.data() + offset, n);
        return n;
      }
    };
    auto opened = std::make_unique<Opened>();
    opened->bytes = n.bytes;
    opened->st = stat_of(n);
    return std::unique_ptr<kbuild::OpenFile>(std::move(opened));
  }

 private:
  struct Node;
  struct stat stat_of(const Node& n) const {
    struct stat st {};
    st.st_dev = kDevice;
    st.st_ino = n.inode;
    st.st_mode = n.mode;
    st.st_nlink = 1;
    st.st_uid = n.uid;
    st.st_gid = n.gid;
    st.st_size = static_cast<off_t>(n.bytes.size());
    st.st_mtim = n.mtime;
    st.st_ctim = n.ctime;
    st.st_atim = n.mtime;
    return st;
  }
  // The node of `path`'s own entry (its directory resolved), or null.
  const Node* entry(const std::string& path) const {
    std::vector<std::string> names = parts(path);
    if (names.empty()) return &nodes_.at("/");
    const std::string name = names.back();
    names.pop_back();
    std::string dir = "/";
    for (const std::string& part : names) dir = join(dir, part);
    std::optional<std::string> at = real_path(dir);
    if (!at) return nullptr;
    auto it = nodes_.find(join(*at, name));
    return it == nodes_.end() ? nullptr : &it->second;
  }

 public:
  kbuild::Result<std::string> read(const std::string& path, std::size_t limit) const override {
    std::optional<std::string> at = real_path(path);
    if (!at) return kbuild::Failure{path + ": " + std::strerror(ENOENT)};
    const Node& n = nodes_.at(*at);
    if (!S_ISREG(n.mode)) return kbuild::Failure{path + ": not a regular file"};
    return n.bytes.substr(0, limit);
  }
  kbuild::Result<std::optional<std::string>> attribute(const std::string& path,
                                                       const char* name) const override {
    std::optional<std::string> at = real_path(path);
    if (!at) return kbuild::Failure{path + ": " + std::strerror(ENOENT)};
    const auto& attributes = nodes_.at(*at).attributes;
    auto it = attributes.find(name);
    if (it == attributes.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
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
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    std::map<std::string, std::string> attributes;
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
  // An entry added to or removed from a directory modifies it, as the
  // kernel does (a hit's absent paths rest on their directories' stamps).
  void changed_directory_of(const std::string& at) {
    auto dir = nodes_.find(at.substr(0, std::max<std::size_t>(at.rfind('/'), 1)));
    if (dir != nodes_.end()) dir->second.mtime = dir->second.ctime = now_;
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
};

}  // namespace kbuild_test
