// What a layer or provider returns: options plus one-line notes for the
// user (entries left out and why). Notes are never errors.
#pragma once

#include <string>
#include <vector>

#include "kbuild/build_options.hpp"

namespace kbuild {

struct OptionsResult {
  BuildOptions options;
  std::vector<std::string> notes;
};

}  // namespace kbuild
