// The real file system on a clock that tests move by hand
// (util/file_system.hpp): passed where a FileSystem is taken, it runs
// `offset` ahead of the system clock, so a real file just written counts as
// settled after advance(), without sleeping. For logic that needs no real files,
// fake_file_system.hpp holds the whole tree in memory.
#pragma once

#include <chrono>

#include "util/file_system.hpp"

namespace kbuild_test {

class FakeFileClock : public kbuild::SystemFileSystem {
 public:
  struct timespec now() const override {
    struct timespec t = SystemFileSystem::now();
    const auto total = std::chrono::nanoseconds(t.tv_nsec) + offset_;
    t.tv_sec +=
        static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(total).count());
    t.tv_nsec = static_cast<long>((total % std::chrono::seconds(1)).count());
    return t;
  }
  // As if `by` passed (past the two-second settle age: 2100 ms).
  void advance(std::chrono::nanoseconds by = std::chrono::milliseconds(2100)) { offset_ += by; }
  // Back to the system clock: what is written next is recent again.
  void rewind() { offset_ = {}; }

 private:
  std::chrono::nanoseconds offset_{};
};

}  // namespace kbuild_test
