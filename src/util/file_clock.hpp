// The clock file times are read against, and how long a file must stay
// unchanged before a cache may remember it by its stamps (ccache's
// InodeCache min_age): a change within the file system's clock tick would
// keep every stamp. A seam, so that tests set the age to zero instead of
// sleeping past it; builds use the system clock and two seconds.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <ctime>

namespace kbuild {

class FileClock {
 public:
  explicit FileClock(std::chrono::nanoseconds settle_age = std::chrono::seconds(2))
      : settle_age_(settle_age) {}
  virtual ~FileClock() = default;
  FileClock(const FileClock&) = delete;
  FileClock& operator=(const FileClock&) = delete;

  // Now on the file system's clock (CLOCK_REALTIME).
  virtual struct timespec now() const;
  // Neither modified nor changed within the settle age.
  bool settled(const struct stat& st) const;

 private:
  std::chrono::nanoseconds settle_age_;
};

// The clock every cache of file stamps uses (the system clock with a
// two-second age, unless a test installed another).
const FileClock& file_clock();

// Installs `clock` as file_clock() for its lifetime (tests only; not
// thread-safe, as nothing that runs beside a test changes it).
class ScopedFileClock {
 public:
  explicit ScopedFileClock(const FileClock& clock);
  ~ScopedFileClock();
  ScopedFileClock(const ScopedFileClock&) = delete;
  ScopedFileClock& operator=(const ScopedFileClock&) = delete;

 private:
  const FileClock* previous_;
};

}  // namespace kbuild
