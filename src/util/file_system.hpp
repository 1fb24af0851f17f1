// file_system: the FileSystem seam (stat, read, list, realpath, now) and the file helpers beneath
// it; the parts the rest of the library uses.
#pragma once

#include <sys/stat.h>
#include <boost/uuid/detail/sha1.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"

// What kbuild sees of the file system outside its own cache directory, and
// the clock file times are read against (ninja's DiskInterface): stat,
// lstat, readlink, open and read, list, realpath and now. The cache, its
// manifests, the digests of inputs and the parsed-file cache look at the
// world only through it, handed one by whoever composes a build (the
// Driver's session: SystemFileSystem), never a global: unit tests pass an
// in-memory tree on a clock they move by hand
// (tests/support/fake_file_system.hpp) instead of real directories and
// sleeps. The cache's own directory is reached through TrustedDir
// (util/trusted_dir), the layer beneath: descriptors opened once, checked
// for who may write them, which is what hostile-user tests exercise on
// real directories.
//
// It also says how long a file must stay unchanged before a cache may
// remember it by its stamps (ccache's InodeCache min_age): a change within
// the file system's clock tick would keep every stamp. Builds wait two
// seconds; a test sets the age to zero or moves the clock past it.
namespace kbuild {

// A file opened for reading (FileSystem::open).
class OpenFile {
 public:
  virtual ~OpenFile() = default;
  // fstat(2): the version opened, whatever its name points to now.
  virtual std::optional<struct stat> status() const = 0;
  // At most `size` bytes from `offset` into `into` (pread(2)); 0 at the
  // end; "PATH: " and the reason on a failure.
  virtual Result<std::size_t> read_at(char* into, std::size_t size, std::uint64_t offset) const = 0;
};

// Many stats in a row (a hit's sweep over thousands of inputs): the real
// one keeps a few directories open, so the kernel walks each directory's
// path once, not once per file. The same answers as FileSystem::status.
class StatSweep {
 public:
  virtual ~StatSweep() = default;
  virtual std::optional<struct stat> status(std::string_view path) = 0;
};

class FileSystem {
 public:
  explicit FileSystem(std::chrono::nanoseconds settle_age = std::chrono::seconds(2))
      : settle_age_(settle_age) {}
  virtual ~FileSystem() = default;
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  // stat(2), links followed; nothing when `path` cannot be stated (errno
  // says why: ENOENT or ENOTDIR for a path that is not there).
  virtual std::optional<struct stat> status(const std::string& path) const = 0;
  // lstat(2): the entry itself, a link not followed (errno as status).
  virtual std::optional<struct stat> link_status(const std::string& path) const = 0;
  // readlink(2): what the link at `path` names; a failure when it is not
  // a link or cannot be read.
  virtual Result<std::string> read_link(const std::string& path) const = 0;
  // The regular file `path` resolves to, opened for reading without
  // blocking (a FIFO fails as "not a regular file", never waits).
  virtual Result<std::unique_ptr<OpenFile>> open(const std::string& path) const = 0;
  // At most `limit` bytes of the regular file `path` ("PATH: not a regular
  // file", or "PATH: " and the reason, when it is not one or cannot be read).
  virtual Result<std::string> read(const std::string& path, std::size_t limit) const = 0;
  // The names in the directory `path` (without . and ..), sorted.
  virtual Result<std::vector<std::string>> list(const std::string& path) const = 0;
  // The absolute path with every link, . and .. resolved; nothing when a
  // part of it does not exist.
  virtual std::optional<std::string> real_path(const std::string& path) const = 0;
  // The extended attribute `name` of what `path` resolves to (getxattr(2):
  // an ACL's system.posix_acl_access); nothing when it has none or its file
  // system keeps none, a failure when it cannot be read.
  virtual Result<std::optional<std::string>> attribute(const std::string& path,
                                                       const char* name) const = 0;
  // Now on the file system's clock (CLOCK_REALTIME).
  virtual struct timespec now() const = 0;
  // A sweep of many stats; by default each is status().
  virtual std::unique_ptr<StatSweep> sweep() const;

  // Neither modified nor changed within the settle age.
  bool settled(const struct stat& st) const;

 private:
  std::chrono::nanoseconds settle_age_;
};

// The real file system and the system clock.
class SystemFileSystem : public FileSystem {
 public:
  using FileSystem::FileSystem;
  std::optional<struct stat> status(const std::string& path) const override;
  std::optional<struct stat> link_status(const std::string& path) const override;
  Result<std::string> read_link(const std::string& path) const override;
  Result<std::unique_ptr<OpenFile>> open(const std::string& path) const override;
  Result<std::string> read(const std::string& path, std::size_t limit) const override;
  Result<std::vector<std::string>> list(const std::string& path) const override;
  std::optional<std::string> real_path(const std::string& path) const override;
  Result<std::optional<std::string>> attribute(const std::string& path,
                                               const char* name) const override;
  struct timespec now() const override;
  std::unique_ptr<StatSweep> sweep() const override;
};

// The real file system with a two-second settle age: what a composition
// root (the Driver's session, a command that opens a cache on its own)
// hands down. Nothing below those calls it (scripts/check-architecture).
const FileSystem& system_file_system();

}  // namespace kbuild

// Small file helpers: whole-file reads, atomic writes, content hashes,
// stamps, unique names.
namespace kbuild {

// A stat time in nanoseconds (mtimes and ctimes compared and stored whole).
inline std::int64_t ns(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

// The file's bytes, or why it cannot be read ("PATH: " and the reason).
Result<std::string> read_whole_file(const std::string& path);

// At most `limit` bytes of the file, or why it cannot be read ("PATH: " and
// the reason).
Result<std::string> read_file_up_to(const std::string& path, std::size_t limit);

// At most `limit` bytes of the regular file at `path`. Anything else (a
// FIFO, a device node, a directory) fails with "PATH: not a regular file"
// before it is opened for reading, so naming a FIFO never blocks; a file
// that cannot be read fails with "PATH: " and the reason.
Result<std::string> read_regular_file_up_to(const std::string& path, std::size_t limit);

// Why a file kbuild is asked to write at `path` must not be replaced by
// renaming a new file over it ("PATH is not a regular file; ..."): a FIFO,
// a device node (-o /dev/null as root), a socket, a directory. Fine when
// `path` is absent or a regular file (a symlink counts as what it names).
Status check_replaceable(const std::string& path);

// Writes `text` to a new temporary file beside `path` (created with
// O_EXCL|O_NOFOLLOW, written through its descriptor) and renames it into
// place, creating parent directories.
Status write_file_atomically(const std::string& path, const std::string& text);

// SHA-1, fed piece by piece; hex() gives 40 hex digits.
class Sha1 {
 public:
  void add(const void* bytes, std::size_t size) { sha_.process_bytes(bytes, size); }
  void add(const std::string& bytes) { add(bytes.data(), bytes.size()); }
  std::string hex();

 private:
  boost::uuids::detail::sha1 sha_;
};

// SHA-1 of `bytes` as 40 hex digits (identifies file versions in reports).
std::string sha1_hex(const std::string& bytes);

// FNV-1a of `text`: a short, stable name for a cache file, not a content
// hash (what the file holds is checked on reading).
std::uint64_t fnv1a(const std::string& text);

// prefix + fnv1a(key) in hex + suffix: a cache file's name.
std::string fnv1a_name(std::string_view prefix, const std::string& key, std::string_view suffix);

// "PID.RANDOM": a part of a file name no other process picks.
std::string unique_suffix();

// The modification time in nanoseconds, or -1 when `path` does not exist.
std::int64_t mtime_ns(const std::string& path);

// Whether `path` is a directory (following links); false when it cannot be read.
bool is_directory(const std::string& path);

// The lexically normal form of `path`, without a trailing slash.
std::string normal_path(const std::string& path);

// Finds `program` like execvp: a name containing '/' is used as it is,
// otherwise each directory of PATH is searched. nullopt when not found or not
// executable.
std::optional<std::string> find_executable(const std::string& program, const Environment& env);

}  // namespace kbuild
