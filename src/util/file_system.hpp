// file_system: the FileSystem seam (stat, read, list, realpath, now) and the file helpers beneath
// it; the parts the rest of the library uses.
#pragma once

#include <sys/stat.h>
#include <boost/uuid/detail/sha1.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"

// What kbuild's caches of file stamps see of the file system, and the clock
// file times are read against (ninja's DiskInterface): stat, read, list,
// realpath and now. A seam, so that unit tests run against an in-memory
// tree and a clock they move by hand (tests/support/fake_file_system.hpp)
// instead of real directories and sleeps; builds use SystemFileSystem.
//
// It also says how long a file must stay unchanged before a cache may
// remember it by its stamps (ccache's InodeCache min_age): a change within
// the file system's clock tick would keep every stamp. Builds wait two
// seconds; a test sets the age to zero or moves the clock past it.
namespace kbuild {

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
  // At most `limit` bytes of the regular file `path` ("PATH: not a regular
  // file", or "PATH: " and the reason, when it is not one or cannot be read).
  virtual Result<std::string> read(const std::string& path, std::size_t limit) const = 0;
  // The names in the directory `path` (without . and ..), sorted.
  virtual Result<std::vector<std::string>> list(const std::string& path) const = 0;
  // The absolute path with every link, . and .. resolved; nothing when a
  // part of it does not exist.
  virtual std::optional<std::string> real_path(const std::string& path) const = 0;
  // Now on the file system's clock (CLOCK_REALTIME).
  virtual struct timespec now() const = 0;

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
  Result<std::string> read(const std::string& path, std::size_t limit) const override;
  Result<std::vector<std::string>> list(const std::string& path) const override;
  std::optional<std::string> real_path(const std::string& path) const override;
  struct timespec now() const override;
};

// The file system every cache of file stamps uses (SystemFileSystem with a
// two-second settle age, unless a test installed another).
const FileSystem& file_system();

// Installs `fs` as file_system() for its lifetime (tests only; not
// thread-safe, as nothing that runs beside a test changes it).
class ScopedFileSystem {
 public:
  explicit ScopedFileSystem(const FileSystem& fs);
  ~ScopedFileSystem();
  ScopedFileSystem(const ScopedFileSystem&) = delete;
  ScopedFileSystem& operator=(const ScopedFileSystem&) = delete;

 private:
  const FileSystem* previous_;
};

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
