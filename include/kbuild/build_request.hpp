// What a build asks for: the device query, the output kind, sources and
// output, the compiler and the user's own flags. Its own module: planning
// (build_plan) and the ISA probes (isa_settings) both read it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/assemble.hpp"
#include "kbuild/isa.hpp"
#include "kbuild/profile.hpp"
#include "kbuild/provider.hpp"

namespace kbuild {

struct BuildRequest {
  DeviceQuery query;  // device type, aot_mode, compile_only
  // --plugin: packages loaded into the process (a device whose file has a
  // plugin section implies its own).
  std::vector<std::string> plugins;
  OutputKind kind = OutputKind::shared_library;
  std::vector<std::string> sources;
  std::string output;  // empty: default_output(sources[0], kind)
  std::string compiler = "g++";
  std::string machine = "x86_64";  // uname -m
  bool strict = false;
  bool min_optimize = false;
  bool debug = false;
  bool warning_all = true;
  bool use_torch = true;  // off: no torch layer (plain C++ kernels)
  // The vector ISA; nullopt: the running CPU's best (as --isa auto), read
  // only when the torch layer applies (a device dry run never reads the CPU).
  std::optional<Isa> isa = Isa{};
  std::vector<std::string> extra_flags;
  std::optional<std::string> include_pch;
  // The Inductor profile (base and torch layers, token order); null: 2.11.
  std::shared_ptr<const Profile> profile;
  // The user layer (-I -D -L -l), appended last.
  std::vector<std::string> include_dirs, definitions, libraries_dirs, libraries;
};

}  // namespace kbuild
