// listener: what a build says as it goes (warnings, notes, lines of information), for the
// caller to show: the library prints nothing.
#pragma once

#include <string>
#include <vector>

namespace kbuild {

// What a build says as it goes, for the caller to show (the library prints
// nothing). Called in order, before the compiler runs where it can be.
class BuildListener {
 public:
  virtual ~BuildListener() = default;
  virtual void warnings(const std::vector<std::string>& lines) = 0;
  virtual void notes(const std::vector<std::string>& lines) = 0;
  // Every note of the plan at once, when the plan is made (the caller may
  // fold them); the other notes come through notes().
  virtual void plan_notes(const std::vector<std::string>& lines) = 0;
  virtual void info(const std::string& line) = 0;
  // A device one typo from a registered one: said as a warning; the plan's
  // note about it would only repeat it.
  virtual void unknown_device(const std::string& /*device*/, const std::string& warning) {
    warnings({warning});
  }
};

}  // namespace kbuild
