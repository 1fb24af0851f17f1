
#include "util/trusted_dir.hpp"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <utility>

#include "kbuild/error.hpp"
#include "util/file_system.hpp"

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
// Asked once per group and owner in a process (build-many's workers ask at
// once: the answers are shared under a lock).
bool group_is_owner_alone(gid_t gid, uid_t owner) {
  static std::mutex mutex;
  static std::map<std::pair<gid_t, uid_t>, bool> answers;
  const std::lock_guard<std::mutex> lock(mutex);
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

// `st`, when given, receives what fstat said.
Status check_opened(int fd, const std::string& path, bool want_dir, struct stat* stated = nullptr) {
  struct stat own {};
  struct stat& st = stated ? *stated : own;
  if (::fstat(fd, &st) != 0) return errno_failure(path);
  if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    return Failure{path + (want_dir ? " is not a directory" : " is not a regular file")};
  if (auto owned = check_ownership(st, fd); !owned) return Failure{path + " " + owned.why()};
  return ok();
}

}  // namespace

namespace {

// Who else could write it, as the rule finds it: its kind decides the fix
// a message offers (never read back from the words).
enum class Writable : std::uint8_t { owner, world, group, acl };
struct OwnershipProblem {
  Writable who;
  std::string why;
};

// The mode bits and the owner: the rule as it was before ACLs.
std::optional<OwnershipProblem> mode_problem(const struct stat& st) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0)
    return OwnershipProblem{Writable::owner, "is owned by uid " + std::to_string(st.st_uid) +
                                                 ", not by you (uid " + std::to_string(me) +
                                                 ") or root"};
  if (st.st_mode & S_IWOTH)
    return OwnershipProblem{Writable::world,
                            "is world-writable (mode " + octal_mode(st.st_mode) + ")"};
  if ((st.st_mode & S_IWGRP) && !group_is_owner_alone(st.st_gid, st.st_uid))
    return OwnershipProblem{Writable::group, "is writable by group " + std::to_string(st.st_gid) +
                                                 ", which has other members (mode " +
                                                 octal_mode(st.st_mode) + ")"};
  return std::nullopt;
}

constexpr const char* kAccessAcl = "system.posix_acl_access";
constexpr const char* kDefaultAcl = "system.posix_acl_default";

// The extended attribute `name` of the file open as `fd` (or, when `fd` is
// -1, at `path`): nullopt when it has none (or its file system keeps no
// ACLs), a Failure when it cannot be read.
Result<std::optional<std::string>> acl_attribute(int fd, const char* name) {
  std::string bytes(256, '\0');
  for (int attempt = 0; attempt < 4; ++attempt) {
    ssize_t got = ::fgetxattr(fd, name, bytes.data(), bytes.size());
    if (got >= 0) {
      bytes.resize(static_cast<std::size_t>(got));
      return std::optional<std::string>(std::move(bytes));
    }
    if (errno == ENODATA || errno == ENOTSUP) return std::optional<std::string>();
    if (errno != ERANGE) break;
    // Larger than the buffer: ask its size (it may grow again meanwhile).
    ssize_t size = ::fgetxattr(fd, name, nullptr, 0);
    if (size < 0) break;
    bytes.assign(static_cast<std::size_t>(size) + 64, '\0');
  }
  return Failure{"has an ACL that cannot be read (" + std::string(std::strerror(errno)) + ")"};
}

// The ACL at `path`, through `files` (following a link, as stat does).
Result<std::optional<std::string>> acl_attribute(const FileSystem& files, const std::string& path,
                                                 const char* name) {
  Result<std::optional<std::string>> bytes = files.attribute(path, name);
  if (!bytes) {
    const std::string& why = bytes.why();
    const std::size_t colon = why.rfind(": ");
    return Failure{"has an ACL that cannot be read (" +
                   (colon == std::string::npos ? why : why.substr(colon + 2)) + ")"};
  }
  return bytes;
}

// Through the descriptor `fd` when it is one, else at `path` in `files`.
Status check_acls(const struct stat& st, int fd, const std::string& path, const FileSystem& files) {
  for (const bool is_default : {false, true}) {
    if (is_default && !S_ISDIR(st.st_mode)) continue;  // only directories have one
    const char* name = is_default ? kDefaultAcl : kAccessAcl;
    Result<std::optional<std::string>> bytes =
        fd >= 0 ? acl_attribute(fd, name) : acl_attribute(files, path, name);
    if (!bytes) return Failure{bytes.why()};
    if (*bytes)
      if (Status acl = check_acl(**bytes, st.st_uid, is_default); !acl) return acl;
  }
  return ok();
}

}  // namespace

Status check_acl(std::string_view xattr, uid_t owner, bool is_default) {
  constexpr std::uint16_t kUser = 0x02, kGroup = 0x08, kMask = 0x10, kOther = 0x20;
  constexpr std::uint16_t kWrite = 0x02;
  constexpr std::size_t kHeader = 4, kEntry = 8;
  auto u16 = [&](std::size_t at) {
    std::uint16_t v;
    std::memcpy(&v, xattr.data() + at, sizeof v);
    return le16toh(v);
  };
  auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, xattr.data() + at, sizeof v);
    return le32toh(v);
  };
  const std::string what = is_default ? "has a default ACL that lets " : "has an ACL that lets ";
  const std::string written = is_default ? " write what is created in it" : " write it";
  if (xattr.size() < kHeader || (xattr.size() - kHeader) % kEntry != 0 || u32(0) != 2)
    return Failure{std::string(is_default ? "has a default ACL" : "has an ACL") +
                   " kbuild cannot read (not version 2)"};
  // Named entries are limited by the mask (when there is one).
  std::uint16_t mask = 07;
  for (std::size_t at = kHeader; at < xattr.size(); at += kEntry)
    if (u16(at) == kMask) mask = u16(at + 2);
  const uid_t me = ::geteuid();
  for (std::size_t at = kHeader; at < xattr.size(); at += kEntry) {
    const std::uint16_t tag = u16(at);
    const std::uint16_t perm = u16(at + 2);
    const std::uint32_t id = u32(at + 4);
    if (tag == kUser && (perm & mask & kWrite) && id != owner && id != 0 && id != me)
      return Failure{what + "uid " + std::to_string(id) + written};
    if (tag == kGroup && (perm & mask & kWrite) && !group_is_owner_alone(id, owner))
      return Failure{what + "group " + std::to_string(id) + ", which has other members," + written};
    // A default ACL's "other" entry is the mode of what is created in it
    // (the umask then does not apply).
    if (is_default && tag == kOther && (perm & kWrite)) return Failure{what + "everyone" + written};
  }
  return ok();
}

namespace {

// The rule: the mode bits and owner, then the ACLs (of the file open as
// `fd`, else at `path` in `files`).
std::optional<OwnershipProblem> ownership_problem(const struct stat& st, int fd,
                                                  const std::string& path,
                                                  const FileSystem& files) {
  if (std::optional<OwnershipProblem> mode = mode_problem(st)) return mode;
  if (Status acl = check_acls(st, fd, path, files); !acl)
    return OwnershipProblem{Writable::acl, acl.why()};
  return std::nullopt;
}

Status as_status(const std::optional<OwnershipProblem>& problem) {
  if (problem) return Failure{problem->why};
  return ok();
}

}  // namespace

Status check_ownership(const struct stat& st, int fd) {
  return as_status(ownership_problem(st, fd, "", system_file_system()));
}

Status check_ownership(const struct stat& st, const std::string& path, const FileSystem& files) {
  return as_status(ownership_problem(st, -1, path, files));
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

Result<UniqueFd> TrustedDir::open_file(const std::string& name, struct stat* st) const {
  const std::string path = path_ + "/" + name;
  UniqueFd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return errno_failure(path);
  if (Status checked = check_opened(fd.get(), path, false, st); !checked)
    return Failure{checked.why()};
  return fd;
}

Result<std::string> TrustedDir::read(const std::string& name, std::size_t limit) const {
  struct stat st {};
  Result<UniqueFd> fd = open_file(name, &st);
  if (!fd) return Failure{fd.why()};
  auto too_large = [&] { return Failure{path_ + "/" + name + " is larger than expected"}; };
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > limit) return too_large();
  // Read straight into a string of the stated size (a dry run reads several
  // entries), and on to the end: the file may have grown since.
  std::string bytes(size + 1, '\0');
  std::size_t have = 0;
  for (;;) {
    if (have == bytes.size()) bytes.resize(bytes.size() * 2);
    ssize_t n = ::read(fd->get(), bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_failure(path_ + "/" + name);
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
    if (have > limit) return too_large();
  }
  bytes.resize(have);
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

UniqueFd lock_file(int dir_fd, const std::string& name, bool trusted, bool wait) {
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return fd;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return UniqueFd();
  if (!S_ISREG(st.st_mode) || (trusted && !check_ownership(st, fd.get()))) {
    errno = EPERM;
    return UniqueFd();
  }
  if (::flock(fd.get(), wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    fd.reset();
    errno = why;
    return UniqueFd();
  }
  return fd;
}

DirLock::DirLock(const TrustedDir& dir, const std::string& name, bool wait)
    : fd_(lock_file(dir.fd(), name, true, wait)) {}

}  // namespace kbuild

namespace kbuild {

namespace {

constexpr const char* kMarker = "CACHEDIR.TAG";
// The signature of the Cache Directory Tagging Specification.
constexpr const char* kMarkerText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kbuild.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

// Everything kbuild creates in a cache directory.
constexpr std::array<const char*, 9> kLayout = {"objects",    "tmp",        "pch",
                                                "discovery",  "programs",   "digests",
                                                "stats.json", "stats.lock", kMarker};

// Also write_atomically's temporary files: another process may be writing
// the marker (two first builds at once) or the stats as we look.
bool is_layout_name(const std::string& name) {
  return std::any_of(kLayout.begin(), kLayout.end(), [&](const char* n) { return name == n; }) ||
         name.rfind(".stats.json.tmp.", 0) == 0 ||
         name.rfind(".CACHEDIR.TAG.tmp.", 0) == 0;  // kMarker's
}

bool hex_name(const std::string& name, std::size_t size) {
  return name.size() >= size &&
         std::all_of(name.begin(), name.begin() + static_cast<long>(size),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// Whether everything in `name` (one of kLayout) has the shape kbuild gives
// it: an unmarked directory is adopted only then (a cache of an older kbuild).
bool layout_holds(const TrustedDir& dir, const std::string& name) {
  auto st = dir.status(name);
  if (!st) return true;
  if (!S_ISDIR(st->st_mode)) return S_ISREG(st->st_mode) && name.find('.') != std::string::npos;
  Result<TrustedDir> sub = dir.sub(name, false);
  if (!sub) return false;
  for (const std::string& entry : sub->list()) {
    bool fits = name == "objects" ? entry.size() == 2 && hex_name(entry, 2)
                : name == "pch"   ? hex_name(entry, 40)
                : name == "discovery"
                    ? entry.rfind("python-", 0) == 0 || entry.rfind("isa-", 0) == 0
                : name == "programs" || name == "digests"
                    ? hex_name(entry, 64)
                    : false;  // tmp/ holds only what a build is making
    if (!fits) return false;
  }
  return true;
}

bool marked(const TrustedDir& dir) {
  Result<std::string> text = dir.read(kMarker, 4096);
  return text && text->rfind("Signature: 8a477f597d28d172789f06886806bc55", 0) == 0;
}

}  // namespace

const char* const kNoCacheRoot =
    "no cache directory: KBUILD_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset or empty; "
    "set KBUILD_CACHE_DIR to use one";

std::string cache_root(const Environment& env) {
  if (auto dir = env.get_nonempty("KBUILD_CACHE_DIR")) return *dir;
  if (auto xdg = env.get_nonempty("XDG_CACHE_HOME")) return *xdg + "/kbuild";
  if (auto home = env.get_nonempty("HOME")) return *home + "/.cache/kbuild";
  return "";
}

Result<TrustedDir> open_cache_root(const std::string& root, bool create) {
  if (root.empty()) return Failure{kNoCacheRoot};
  struct stat st {};
  if (!create && ::stat(root.c_str(), &st) != 0)
    return Failure{"cache directory " + root + " does not exist"};
  Result<TrustedDir> dir = TrustedDir::open(root, create);
  if (!dir)
    return Failure{
        "cache directory " + dir.why() +
        "; fix it (chmod go-w, chown) or set KBUILD_CACHE_DIR to a directory only you can write"};
  if (marked(*dir)) return dir;
  std::vector<std::string> names = dir->list();
  const bool layout = std::all_of(names.begin(), names.end(), [&dir](const std::string& n) {
    return is_layout_name(n) && layout_holds(*dir, n);
  });
  // Marked since we looked: another kbuild adopted it (and may have begun
  // a build in it) while we listed.
  if (!layout && !marked(*dir))
    return Failure{"cache directory " + root +
                   " is not kbuild's (no CACHEDIR.TAG, and it holds other files); set "
                   "KBUILD_CACHE_DIR to an empty or new directory"};
  if (Status written = dir->write_atomically(kMarker, kMarkerText); !written)
    return Failure{"cache directory " + root + ": " + written.why()};
  return dir;
}

Result<TrustedDir> TrustedDir::duplicate() const {
  UniqueFd copy(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!copy.valid()) return errno_failure(path_);
  return TrustedDir(std::move(copy), path_);
}

namespace {

// The directory open_discovery_dir opened last, and the identities (device,
// inode) of it and of the root its path started at.
struct OpenedDiscovery {
  std::string root;
  std::pair<dev_t, ino_t> root_id{};
  std::pair<dev_t, ino_t> id{};
  std::optional<TrustedDir> dir;
};

std::pair<dev_t, ino_t> identity(const struct stat& st) {
  return {st.st_dev, st.st_ino};
}

// Still the directories `opened` holds: `root` names the same directory and
// its discovery/ (not a link) is the one held, both still trusted. The held
// descriptor keeps discovery/'s inode in use, so an equal device and inode
// at the path is that directory, not a new one (a cleared cache's).
std::optional<Result<TrustedDir>> reopened(const OpenedDiscovery& opened, const std::string& root) {
  if (!opened.dir || opened.root != root) return std::nullopt;
  struct stat root_st {};
  struct stat named {};
  if (::stat(root.c_str(), &root_st) != 0 || ::lstat((root + "/discovery").c_str(), &named) != 0)
    return std::nullopt;
  if (identity(root_st) != opened.root_id || identity(named) != opened.id ||
      !S_ISDIR(root_st.st_mode) || !S_ISDIR(named.st_mode) ||
      !check_ownership(root_st, root, system_file_system()) ||
      !check_ownership(named, root + "/discovery", system_file_system()))
    return std::nullopt;
  return opened.dir->duplicate();
}

}  // namespace

Result<TrustedDir> open_discovery_dir(const std::string& root, bool create_root) {
  static std::mutex mutex;
  static OpenedDiscovery opened;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto again = reopened(opened, root)) return std::move(*again);
  Result<TrustedDir> root_dir = open_cache_root(root, create_root);
  if (!root_dir) return root_dir;
  Result<TrustedDir> dir = root_dir->sub("discovery", true);
  struct stat root_st {};
  struct stat st {};
  if (!dir || ::fstat(root_dir->fd(), &root_st) != 0 || ::fstat(dir->fd(), &st) != 0) return dir;
  Result<TrustedDir> kept = dir->duplicate();
  if (kept) opened = OpenedDiscovery{root, identity(root_st), identity(st), std::move(*kept)};
  return dir;
}

Status clear_cache(const TrustedDir& root) {
  if (!marked(root))
    return Failure{root.path() +
                   " is not marked as kbuild's cache (no CACHEDIR.TAG); not clearing it"};
  for (const std::string& name : root.list()) {
    if (name == kMarker || !is_layout_name(name)) continue;
    if (Status removed = root.remove_tree(name); !removed) return removed;
  }
  return ok();
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {
namespace {

const char* const kOverride = ", or pass --allow-untrusted-device-files if you trust it";

// What is wrong with `path`'s owner or mode ("" when nothing), and the fix.
struct Finding {
  std::string problem;
  std::string fix;
};

// The rule is check_ownership()'s, the one for caches too; `problem` is
// what it found at `path`, and its kind names the fix.
std::optional<Finding> finding_of(const std::optional<OwnershipProblem>& problem,
                                  const std::string& path) {
  if (!problem) return std::nullopt;
  switch (problem->who) {
    case Writable::owner: return Finding{problem->why, "chown it"};
    case Writable::world: return Finding{problem->why, "run chmod o-w " + path};
    case Writable::acl:
      return Finding{problem->why, "run setfacl -b " + path + " (getfacl shows who)"};
    case Writable::group: break;
  }
  return Finding{problem->why, "run chmod g-w " + path};
}

// The path's status and ACLs, following a link as stat does.
std::optional<Finding> inspect_status(const struct stat& st, const std::string& path,
                                      const FileSystem& files) {
  return finding_of(ownership_problem(st, -1, path, files), path);
}

std::optional<Finding> inspect(const std::string& path, const FileSystem& files) {
  const std::optional<struct stat> st = files.status(path);
  if (!st) return std::nullopt;
  return inspect_status(*st, path, files);
}

Failure file_refused(const std::string& path, const std::string& what, const Finding& finding) {
  std::string why =
      what + " " + path + " " + finding.problem + "; refusing to use it: " + finding.fix;
  return Failure{why.append(kOverride)};
}

Failure directory_refused(const std::string& path, const std::string& what, const std::string& dir,
                          const Finding& finding) {
  // Anyone able to write the directory can replace the file.
  std::string why = what + " " + path + " is in " + dir + ", which " + finding.problem +
                    "; refusing to use it: move it to a directory only you can write";
  return Failure{why.append(kOverride)};
}

}  // namespace

Status check_trusted(const std::string& path, const std::string& what, const FileSystem& files) {
  auto finding = inspect(path, files);
  if (!finding) return ok();
  return file_refused(path, what, *finding);
}

Status check_trusted_file(const std::string& path, const std::string& what,
                          const FileSystem& files) {
  if (auto own = check_trusted(path, what, files); !own) return own;
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec).parent_path();
  if (ec) return ok();
  if (auto finding = inspect(dir.string(), files))
    return directory_refused(path, what, dir.string(), *finding);
  // Reached through a symlink: the directories it leads to count too.
  const std::string real = files.real_path(path).value_or("");
  if (!real.empty() && real != fs::absolute(path, ec).lexically_normal().string())
    return check_trusted_real_path(real, path, what, files);
  return ok();
}

Status check_trusted_real_path(const std::string& real_path, const std::string& path,
                               const std::string& what, const FileSystem& files) {
  fs::path dir = fs::path(real_path).parent_path();
  if (auto finding = inspect(dir.string(), files))
    return directory_refused(path, what, dir.string(), *finding);
  // Higher up, a shared directory with the sticky bit (/tmp) is fine: no one
  // else can rename what is in it.
  for (fs::path up = dir.parent_path(); !up.empty(); up = up.parent_path()) {
    if (const std::optional<struct stat> stated = files.status(up.string())) {
      const struct stat& st = *stated;
      auto finding = inspect_status(st, up.string(), files);
      bool shared_sticky = (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH) &&
                           (st.st_uid == ::geteuid() || st.st_uid == 0);
      if (finding && !shared_sticky) return directory_refused(path, what, up.string(), *finding);
    }
    if (up == up.root_path()) break;
  }
  return ok();
}

Status check_trusted_opened_file(int fd, const std::string& real_path, const std::string& path,
                                 const std::string& what, const FileSystem& files) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ok();  // the read that follows says why
  if (auto finding = finding_of(ownership_problem(st, fd, "", files), path))
    return file_refused(path, what, *finding);
  return check_trusted_real_path(real_path, path, what, files);
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

namespace {

std::string directory_of(const std::string& output) {
  std::string dir = fs::path(output).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string work_prefix(const std::string& name) {
  return "." + name + ".kbuild-tmp.";
}
// A work directory is made under this name and locked before it is renamed
// to its work_prefix name: the clean-up never sees it unlocked.
std::string new_prefix(const std::string& name) {
  return "." + name + ".kbuild-new.";
}
// Only a build that died between mkdir and rename leaves a "new" directory.
constexpr int kNewDirGraceSeconds = 60;

// Removes `name` in `dir_fd` when no live build holds its lock (and, for a
// directory still being made, when it is old).
void remove_if_dead(int dir_fd, const std::string& name, const std::string& path, bool is_new) {
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) ::unlinkat(dir_fd, name.c_str(), 0);  // a link never is ours
    return;
  }
  UniqueFd held(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid()) return;  // not ours to remove
  if (is_new && std::time(nullptr) - st.st_ctim.tv_sec < kNewDirGraceSeconds) return;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return;  // a live build holds it
  (void)remove_tree_at(dir_fd, name, path);
}

void remove_dead_in(int dir_fd, const std::string& dir, const std::string& name) {
  const std::string prefix = work_prefix(name), fresh = new_prefix(name);
  int copy = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return;
  DIR* listing = ::fdopendir(copy);
  if (!listing) {
    ::close(copy);
    return;
  }
  std::vector<std::pair<std::string, bool>> dead;
  while (struct dirent* e = ::readdir(listing)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
      dead.emplace_back(e->d_name, false);
    if (std::strncmp(e->d_name, fresh.c_str(), fresh.size()) == 0)
      dead.emplace_back(e->d_name, true);
  }
  ::closedir(listing);
  for (const auto& [entry, is_new] : dead) remove_if_dead(dir_fd, entry, dir + "/" + entry, is_new);
}

}  // namespace

void remove_dead_work_dirs(const std::string& output) {
  UniqueFd dir(::open(directory_of(output).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid())
    remove_dead_in(dir.get(), directory_of(output), fs::path(output).filename().string());
}

AtomicOutput::AtomicOutput(const std::string& output)
    : output_(output), name_(fs::path(output).filename().string()) {
  const std::string dir = directory_of(output);
  dir_fd_ = UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd_.valid())
    throw Error(ErrorKind::output, "cannot open output directory " + dir + ": " +
                                       std::strerror(errno) + "; create it first");
  refuse_special_output();
  remove_dead_in(dir_fd_.get(), dir, name_);
  const std::string suffix = unique_suffix();
  const std::string making = new_prefix(name_) + suffix;
  work_name_ = work_prefix(name_) + suffix;
  work_path_ = (fs::path(dir) / work_name_).string();
  if (::mkdirat(dir_fd_.get(), making.c_str(), 0700) != 0)
    throw Error(ErrorKind::output, "cannot write beside " + output + ": " + std::strerror(errno) +
                                       "; choose a writable output directory");
  work_fd_ = UniqueFd(
      ::openat(dir_fd_.get(), making.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat work {};
  // Someone who can write the directory could have swapped in their own.
  if (!work_fd_.valid() || ::fstat(work_fd_.get(), &work) != 0 || work.st_uid != ::geteuid() ||
      (work.st_mode & 077) != 0 || ::flock(work_fd_.get(), LOCK_EX | LOCK_NB) != 0 ||
      ::renameat(dir_fd_.get(), making.c_str(), dir_fd_.get(), work_name_.c_str()) != 0) {
    work_fd_.reset();
    (void)remove_tree_at(dir_fd_.get(), making, dir + "/" + making);
    throw Error(ErrorKind::output, "cannot make a private work directory beside " + output +
                                       "; choose an output directory only you can write");
  }
  result_path_ = work_path_ + "/" + name_;
  started_ = work.st_ctim;
}

void AtomicOutput::discard_result() const {
  ::unlinkat(work_fd_.get(), name_.c_str(), 0);
}

AtomicOutput::~AtomicOutput() {
  // Removed through the opened directory: whatever is at its name now.
  if (work_fd_.valid()) {
    int copy = ::dup(work_fd_.get());
    if (copy >= 0) {
      DIR* listing = ::fdopendir(copy);
      std::vector<std::string> names;
      if (listing) {
        while (struct dirent* e = ::readdir(listing))
          if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
        ::closedir(listing);
      } else {
        ::close(copy);
      }
      for (const std::string& n : names) (void)remove_tree_at(work_fd_.get(), n, scratch(n));
    }
    ::unlinkat(dir_fd_.get(), work_name_.c_str(), AT_REMOVEDIR);
  }
}

Result<UniqueFd> AtomicOutput::create_result(mode_t mode) const {
  UniqueFd fd(::openat(work_fd_.get(), name_.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return Failure{"cannot create " + result_path_ + ": " + std::strerror(errno)};
  return fd;
}

Result<UniqueFd> AtomicOutput::open_result() const {
  UniqueFd fd(
      ::openat(work_fd_.get(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid())
    return Failure{std::string("it wrote no ") + name_ + " (" + std::strerror(errno) + ")"};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Failure{"what it wrote is not a regular file"};
  return fd;
}

void AtomicOutput::refuse_special_output() const {
  struct stat st {};
  if (::fstatat(dir_fd_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(st.st_mode))
    throw Error(ErrorKind::output, "output " + output_ +
                                       " exists and is not a regular file; refusing to replace "
                                       "it: remove it or choose another -o");
}

void AtomicOutput::commit() {
  Result<UniqueFd> result = open_result();
  if (!result)
    throw Error(ErrorKind::output, "cannot move the result into " + output_ + ": " + result.why());
  refuse_special_output();  // again: it may have appeared while the build ran
  if (::renameat(work_fd_.get(), name_.c_str(), dir_fd_.get(), name_.c_str()) != 0)
    throw Error(ErrorKind::output,
                "cannot move the result into " + output_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace kbuild
