// The base layer: toolchain, optimization, warnings (Inductor's CppOptions),
// as the Inductor profile lists them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/profile.hpp"

namespace kbuild {

struct BaseSettings {
  std::string compiler = "g++";
  bool do_link = true;                     // false for compile-only, precompile, preprocess
  bool min_optimize = false;               // -O1 instead of -O3 (Inductor's wrapper level)
  bool debug = false;                      // -O0 -g (TORCHINDUCTOR_DEBUG_COMPILE)
  bool warning_all = true;                 // -Wall (Inductor's ISA probes turn it off)
  std::vector<std::string> extra_flags;    // joined into one passthrough entry
  std::string machine = "x86_64";          // uname -m, picks -march/-mcpu
  std::shared_ptr<const Profile> profile;  // null: default_profile() (2.11)
  const Environment* env = nullptr;        // AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION
};

// The conditions the profile's entries test, from the settings.
ProfileFacts base_facts(const BaseSettings& settings);

BuildOptions base_layer(const BaseSettings& settings);

}  // namespace kbuild
