#include "kbuild/trusted_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "util/file_util.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The colon-separated fields of each line of a user or group database file.
std::vector<std::vector<std::string>> database(const char* path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    std::string field;
    while (std::getline(split, field, ':')) fields.push_back(field);
    if (!line.empty() && line.back() == ':') fields.emplace_back();
    rows.push_back(std::move(fields));
  }
  return rows;
}

// Whether group `gid` has exactly one member, `owner` (as its primary group,
// or listed as its only member): then group-writable means writable by the
// owner alone. Read from /etc/group and /etc/passwd (a static kbuild has no
// NSS): a group found only elsewhere (LDAP) counts as shared, the safe side.
// Asked once per group and owner in a process.
bool group_is_owner_alone(gid_t gid, uid_t owner) {
  static std::map<std::pair<gid_t, uid_t>, bool> answers;
  auto found = answers.find({gid, owner});
  if (found != answers.end()) return found->second;
  std::string owner_name;
  std::set<std::string> members;
  for (const auto& user : database("/etc/passwd")) {
    if (user.size() < 4) continue;
    if (user[2] == std::to_string(owner)) owner_name = user[0];
    if (user[3] == std::to_string(gid)) members.insert(user[0]);
  }
  bool listed = false;
  for (const auto& group : database("/etc/group")) {
    if (group.size() < 4 || group[2] != std::to_string(gid)) continue;
    listed = true;
    std::stringstream names(group[3]);
    std::string name;
    while (std::getline(names, name, ','))
      if (!name.empty()) members.insert(name);
  }
  bool alone = listed && !owner_name.empty() && members == std::set<std::string>{owner_name};
  answers[{gid, owner}] = alone;
  return alone;
}

Failure errno_failure(const std::string& what) {
  return Failure{what + ": " + std::strerror(errno)};
}

Status check_opened(int fd, const std::string& path, bool want_dir) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_failure(path);
  if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return Failure{path + (want_dir ? " is not a directory" : " is not a regular file")};
  if (auto owned = check_ownership(st); !owned) return Failure{path + " " + owned.why()};
  return ok();
}

}  // namespace

Status check_ownership(const struct stat& st) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return Failure{"is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
                   std::to_string(me) + ") or root"};
  if (st.st_mode & S_IWOTH)
    return Failure{"is world-writable (mode " + octal_mode(st.st_mode) + ")"};
  if ((st.st_mode & S_IWGRP) && !group_is_owner_alone(st.st_gid, st.st_uid))
    return Failure{"is writable by group " + std::to_string(st.st_gid) +
                   ", which has other members (mode " + octal_mode(st.st_mode) + ")"};
  return ok();
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<TrustedDir> TrustedDir::open(const std::string& path, bool create) {
  if (path.empty()) return Failure{"no directory named"};
  if (create) {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec) return Failure{"cannot create " + path + ": " + ec.message()};
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return errno_failure(path);
  if (Status checked = check_opened(fd.get(), path, true); !checked) return Failure{checked.why()};
  return TrustedDir(std::move(fd), path);
}

Result<TrustedDir> TrustedDir::sub(const std::string& name, bool create) const {
  int parent = fd_.get();
  UniqueFd current;
  std::string path = path_;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t slash = name.find('/', start);
    std::string part =
        name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? name.size() + 1 : slash + 1;
    if (part.empty()) continue;
    path += "/" + part;
    if (create && ::mkdirat(parent, part.c_str(), 0777) != 0 && errno != EEXIST)
      return errno_failure("cannot create " + path);
    UniqueFd next(::openat(parent, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return errno_failure(path);
    if (Status checked = check_opened(next.get(), path, true); !checked)
      return Failure{checked.why()};
    current = std::move(next);
    parent = current.get();
  }
  if (!current.valid()) return Failure{"no directory named"};
  return TrustedDir(std::move(current), path);
}

Result<UniqueFd> TrustedDir::open_file(const std::string& name) const {
  const std::string path = path_ + "/" + name;
  UniqueFd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return errno_failure(path);
  if (Status checked = check_opened(fd.get(), path, false); !checked) return Failure{checked.why()};
  return fd;
}

Result<std::string> TrustedDir::read(const std::string& name, std::size_t limit) const {
  Result<UniqueFd> fd = open_file(name);
  if (!fd) return Failure{fd.why()};
  std::string bytes;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_failure(path_ + "/" + name);
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
    if (bytes.size() > limit) return Failure{path_ + "/" + name + " is larger than expected"};
  }
  return bytes;
}

Result<UniqueFd> TrustedDir::create_file(const std::string& name, mode_t mode) const {
  UniqueFd fd(::openat(fd_.get(), name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return errno_failure("cannot create " + path_ + "/" + name);
  return fd;
}

Status write_all(int fd, std::string_view bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_failure("cannot write " + path);
    done += static_cast<std::size_t>(n);
  }
  return ok();
}

Status TrustedDir::write_atomically(const std::string& name, const std::string& bytes) const {
  const std::string tmp = "." + name + ".tmp." + unique_suffix();
  Result<UniqueFd> fd = create_file(tmp, 0644);
  if (!fd) return Failure{fd.why()};
  Status written = write_all(fd->get(), bytes, path_ + "/" + tmp);
  fd->reset();
  if (written) written = rename(tmp, name);
  if (!written) (void)remove_file(tmp);
  return written;
}

Status TrustedDir::rename(const std::string& from, const std::string& to) const {
  return rename(from, *this, to);
}

Status TrustedDir::rename(const std::string& from, const TrustedDir& to_dir,
                          const std::string& to) const {
  if (::renameat(fd_.get(), from.c_str(), to_dir.fd(), to.c_str()) != 0)
    return errno_failure("cannot rename " + path_ + "/" + from + " to " + to_dir.path() + "/" + to);
  return ok();
}

Status TrustedDir::remove_file(const std::string& name) const {
  if (::unlinkat(fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
    return errno_failure("cannot remove " + path_ + "/" + name);
  return ok();
}

namespace {

// Empties the directory open as `fd` (taken), never following a link.
bool remove_contents(int fd) {
  DIR* dir = ::fdopendir(fd);
  if (!dir) {
    ::close(fd);
    return false;
  }
  bool ok = true;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  for (const std::string& name : names) {
    if (::unlinkat(::dirfd(dir), name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) {
      ok = false;
      continue;
    }
    int sub = ::openat(::dirfd(dir), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0 || !remove_contents(sub) ||
        ::unlinkat(::dirfd(dir), name.c_str(), AT_REMOVEDIR) != 0)
      ok = false;
  }
  ::closedir(dir);
  return ok;
}

}  // namespace

Status remove_tree_at(int parent_fd, const std::string& name, const std::string& path) {
  if (::unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return ok();
  int sub = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0) return errno_failure("cannot remove " + path);
  if (!remove_contents(sub) || ::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0)
    return errno_failure("cannot remove " + path);
  return ok();
}

Status TrustedDir::remove_tree(const std::string& name) const {
  return remove_tree_at(fd_.get(), name, path_ + "/" + name);
}

std::vector<std::string> TrustedDir::list() const {
  std::vector<std::string> names;
  int copy = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return names;
  DIR* dir = ::fdopendir(copy);
  if (!dir) {
    ::close(copy);
    return names;
  }
  while (struct dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(dir);
  return names;
}

bool TrustedDir::exists(const std::string& name) const {
  return status(name).has_value();
}

std::optional<struct stat> TrustedDir::status(const std::string& name) const {
  struct stat st {};
  if (::fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return st;
}

void TrustedDir::touch(const std::string& name) const {
  ::utimensat(fd_.get(), name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

UniqueFd lock_file(int dir_fd, const std::string& name, bool trusted) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return fd;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return UniqueFd();
  if (!S_ISREG(st.st_mode) || (trusted && !check_ownership(st))) {
    errno = EPERM;
    return UniqueFd();
  }
  if (::flock(fd.get(), LOCK_EX) != 0) return UniqueFd();
  return fd;
}

DirLock::DirLock(const TrustedDir& dir, const std::string& name)
    : fd_(lock_file(dir.fd(), name, true)) {}

}  // namespace kbuild
