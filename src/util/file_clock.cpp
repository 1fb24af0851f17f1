#include "util/file_clock.hpp"

namespace kbuild {

namespace {

std::int64_t ns(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

const FileClock* installed = nullptr;

}  // namespace

struct timespec FileClock::now() const {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

bool FileClock::settled(const struct stat& st) const {
  const std::int64_t at = ns(now()), age = settle_age_.count();
  return at - ns(st.st_mtim) >= age && at - ns(st.st_ctim) >= age;
}

const FileClock& file_clock() {
  static const FileClock system;
  return installed ? *installed : system;
}

ScopedFileClock::ScopedFileClock(const FileClock& clock) : previous_(installed) {
  installed = &clock;
}

ScopedFileClock::~ScopedFileClock() {
  installed = previous_;
}

}  // namespace kbuild
