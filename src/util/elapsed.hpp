// How long something took, for the timings a report and -v show.
#pragma once

#include <chrono>

namespace kbuild {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kbuild
