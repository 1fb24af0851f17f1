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
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstddef>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/result.hpp"

namespace kbuild {

class FileSystem {
 public:
  explicit FileSystem(std::chrono::nanoseconds settle_age = std::chrono::seconds(2))
      : settle_age_(settle_age) {}
  virtual ~FileSystem() = default;
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  // stat(2), links followed; nothing when `path` cannot be stated.
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
