
#include "util/file_system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <boost/uuid/detail/sha1.hpp>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

namespace kbuild {

bool FileSystem::settled(const struct stat& st) const {
  const std::int64_t at = ns(now()), age = settle_age_.count();
  return at - ns(st.st_mtim) >= age && at - ns(st.st_ctim) >= age;
}

std::unique_ptr<StatSweep> FileSystem::sweep() const {
  struct Each : StatSweep {
    explicit Each(const FileSystem& files) : files_(files) {}
    std::optional<struct stat> status(std::string_view path) override {
      path_.assign(path);
      return files_.status(path_);
    }
    const FileSystem& files_;
    std::string path_;
  };
  return std::make_unique<Each>(*this);
}

std::optional<struct stat> SystemFileSystem::status(const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

std::optional<struct stat> SystemFileSystem::link_status(const std::string& path) const {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

Result<std::string> SystemFileSystem::read_link(const std::string& path) const {
  std::string target(4096, '\0');
  const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
  if (n < 0) return Failure{path + ": " + std::strerror(errno)};
  if (static_cast<std::size_t>(n) >= target.size())
    return Failure{path + ": " + std::strerror(ENAMETOOLONG)};
  target.resize(static_cast<std::size_t>(n));
  return target;
}

namespace {

class SystemOpenFile : public OpenFile {
 public:
  SystemOpenFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~SystemOpenFile() override { ::close(fd_); }
  SystemOpenFile(const SystemOpenFile&) = delete;
  SystemOpenFile& operator=(const SystemOpenFile&) = delete;
  std::optional<struct stat> status() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return std::nullopt;
    return st;
  }
  Result<std::size_t> read_at(char* into, std::size_t size, std::uint64_t offset) const override {
    for (;;) {
      const ssize_t n = ::pread(fd_, into, size, static_cast<off_t>(offset));
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) return Failure{path_ + ": " + std::strerror(errno)};
    }
  }

 private:
  int fd_;
  std::string path_;
};

// stat(2) by a file's name in its directory, the directory opened once
// (O_PATH) for the files in it: the kernel walks a directory's path once,
// not once per file (a hit stats thousands of headers in a few hundred
// directories). The same answer as stat(path): the path resolves the same
// way, its last part followed if a symlink. A manifest's files are sorted,
// so a directory's files come in a few runs and a few open directories
// serve them all.
class DirStatSweep : public StatSweep {
 public:
  DirStatSweep() = default;
  DirStatSweep(const DirStatSweep&) = delete;
  DirStatSweep& operator=(const DirStatSweep&) = delete;
  ~DirStatSweep() override {
    for (Slot& slot : slots_)
      if (slot.fd >= 0) ::close(slot.fd);
  }

  std::optional<struct stat> status(std::string_view path) override {
    struct stat st {};
    const char* slash =
        path.empty() ? nullptr : static_cast<const char*>(::memrchr(path.data(), '/', path.size()));
    const std::size_t name_at = slash ? static_cast<std::size_t>(slash - path.data()) + 1 : 0;
    const std::size_t name_size = path.size() - name_at;
    if (slash && name_size > 0 && name_size <= NAME_MAX) {
      const int dir = open_dir(name_at == 1 ? std::string_view("/") : path.substr(0, name_at - 1));
      if (dir >= 0) {
        char name[NAME_MAX + 1];
        std::memcpy(name, path.data() + name_at, name_size);
        name[name_size] = '\0';
        if (::fstatat(dir, name, &st, 0) != 0) return std::nullopt;
        return st;
      }
    }
    path_.assign(path);  // a bare name, or a directory that cannot be opened
    if (::stat(path_.c_str(), &st) != 0) return std::nullopt;
    return st;
  }

 private:
  struct Slot {
    std::string dir;
    int fd = -1;
    unsigned used = 0;
  };
  // The directory's descriptor, -1 when it cannot be opened.
  int open_dir(std::string_view dir) {
    Slot* oldest = &slots_[0];
    for (Slot& slot : slots_) {
      if (slot.used && slot.dir == dir) {
        slot.used = ++clock_;
        return slot.fd;
      }
      if (slot.used < oldest->used) oldest = &slot;
    }
    if (oldest->fd >= 0) ::close(oldest->fd);
    oldest->dir.assign(dir);
    oldest->fd = ::open(oldest->dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    oldest->used = ++clock_;
    return oldest->fd;
  }
  std::array<Slot, 8> slots_;
  unsigned clock_ = 0;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<OpenFile>> SystemFileSystem::open(const std::string& path) const {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Failure{path + ": " + std::strerror(errno)};
  auto file = std::make_unique<SystemOpenFile>(fd, path);
  const std::optional<struct stat> st = file->status();
  if (!st) return Failure{path + ": " + std::strerror(errno)};
  if (!S_ISREG(st->st_mode)) return Failure{path + ": not a regular file"};
  return std::unique_ptr<OpenFile>(std::move(file));
}

std::unique_ptr<StatSweep> SystemFileSystem::sweep() const {
  return std::make_unique<DirStatSweep>();
}

Result<std::string> SystemFileSystem::read(const std::string& path, std::size_t limit) const {
  return read_regular_file_up_to(path, limit);
}

Result<std::vector<std::string>> SystemFileSystem::list(const std::string& path) const {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
  if (!dir) return Failure{path + ": " + std::strerror(errno)};
  std::vector<std::string> names;
  while (const struct dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> SystemFileSystem::real_path(const std::string& path) const {
  std::unique_ptr<char, void (*)(void*)> resolved(::realpath(path.c_str(), nullptr), std::free);
  if (!resolved) return std::nullopt;
  return std::string(resolved.get());
}

Result<std::optional<std::string>> SystemFileSystem::attribute(const std::string& path,
                                                               const char* name) const {
  std::string bytes(256, '\0');
  for (int attempt = 0; attempt < 4; ++attempt) {
    const ssize_t got = ::getxattr(path.c_str(), name, bytes.data(), bytes.size());
    if (got >= 0) {
      bytes.resize(static_cast<std::size_t>(got));
      return std::optional<std::string>(std::move(bytes));
    }
    if (errno == ENODATA || errno == ENOTSUP) return std::optional<std::string>();
    if (errno != ERANGE) break;
    // Larger than the buffer: ask its size (it may grow again meanwhile).
    const ssize_t size = ::getxattr(path.c_str(), name, nullptr, 0);
    if (size < 0) break;
    bytes.assign(static_cast<std::size_t>(size) + 64, '\0');
  }
  return Failure{path + ": " + std::strerror(errno)};
}

struct timespec SystemFileSystem::now() const {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

const FileSystem& system_file_system() {
  static const SystemFileSystem system;
  return system;
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

Result<std::string> read_whole_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Failure{path + ": " + std::strerror(errno)};
  struct stat st {};
  std::string bytes;
  // Sized once from fstat (a compiler, a source, an entry: megabytes read
  // on every cached build), then read to the end (files in /proc say 0).
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    bytes.resize(static_cast<std::size_t>(st.st_size));
  std::size_t have = 0;
  int failed = 0;  // read(2)'s errno
  for (;;) {
    if (have == bytes.size()) bytes.resize(std::max<std::size_t>(4096, bytes.size() * 2));
    ssize_t n = ::read(fd, bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed = n < 0 ? errno : 0;
      break;
    }
    have += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (failed) return Failure{path + ": " + std::strerror(failed)};
  bytes.resize(have);
  return bytes;
}

Result<std::string> read_file_up_to(const std::string& path, std::size_t limit) {
  // Plain read(2), not an ifstream: a stream's locale set-up was a visible
  // part of a dry run, which reads several small files.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Failure{path + ": " + std::strerror(errno)};
  std::string text;
  char chunk[16384];
  int failed = 0;  // read(2)'s errno
  while (text.size() < limit) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed = n < 0 ? errno : 0;
      break;
    }
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (failed) return Failure{path + ": " + std::strerror(failed)};
  if (text.size() > limit) text.resize(limit);
  return text;
}

Result<std::string> read_regular_file_up_to(const std::string& path, std::size_t limit) {
  auto unreadable = [&](int error) { return Failure{path + ": " + std::strerror(error)}; };
  const Failure special{path + ": not a regular file"};
  // Looked at before opening (opening a device node can do something),
  // then again on the opened file: it may have been swapped in between.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return unreadable(errno);
  if (!S_ISREG(st.st_mode)) return special;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return unreadable(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) return unreadable(errno);
  if (!S_ISREG(st.st_mode)) return special;
  // Sized once from fstat (a source, a touched header: read on a hit),
  // then read straight into place, to the end or the limit.
  std::string text(std::min(static_cast<std::size_t>(st.st_size), limit), '\0');
  std::size_t have = 0;
  while (have < limit) {
    if (have == text.size()) text.resize(std::min(std::max<std::size_t>(4096, have * 2), limit));
    ssize_t n = ::read(fd, text.data() + have, text.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unreadable(errno);
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  text.resize(have);
  return text;
}

Status check_replaceable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ok();  // absent: created
  if (S_ISDIR(st.st_mode)) return Failure{path + " is a directory"};
  if (!S_ISREG(st.st_mode))
    return Failure{path + " is not a regular file; kbuild replaces only regular files"};
  return ok();
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) return Failure{"cannot create " + parent.string() + ": " + ec.message()};
  const std::string tmp = path + ".tmp." + unique_suffix();
  // New, never through a link someone put at the name.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return Failure{"cannot create " + tmp + ": " + std::strerror(errno)};
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    done += static_cast<std::size_t>(n);
  }
  const bool written = done == text.size() && ::close(fd) == 0;
  if (done != text.size()) ::close(fd);
  if (!written) {
    fs::remove(tmp, ec);
    return Failure{"cannot write " + tmp};
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    return Failure{"cannot rename into " + path + ": " + why};
  }
  return ok();
}

std::string Sha1::hex() {
  boost::uuids::detail::sha1::digest_type digest;
  sha_.get_digest(digest);
  char out[41];
  for (std::size_t i = 0; i < 5; ++i) std::snprintf(out + 8 * i, 9, "%08x", digest[i]);
  return std::string(out, 40);
}

std::string sha1_hex(const std::string& bytes) {
  Sha1 sha;
  sha.add(bytes);
  return sha.hex();
}

std::string unique_suffix() {
  static std::mt19937_64 rng{std::random_device{}()};
  // Built by appending: g++ 12 warns falsely (-Wrestrict) on literal + string chains here.
  std::string suffix = std::to_string(::getpid());
  suffix += '.';
  suffix += std::to_string(rng() % 100000000);
  return suffix;
}

std::int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string normal_path(const std::string& path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string fnv1a_name(std::string_view prefix, const std::string& key, std::string_view suffix) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(fnv1a(key)));
  return std::string(prefix) + hex + std::string(suffix);
}

namespace {

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_executable(const std::string& program, const Environment& env) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos)
    return is_executable_file(program) ? std::optional<std::string>(program) : std::nullopt;
  const std::string path = env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  // As getline on ':' (no stream: a dry run looks up several programs).
  for (std::size_t start = 0; start < path.size();) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace kbuild
