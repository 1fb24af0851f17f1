// pkg_config: a device file's pkg-config packages: their cflags and libraries, read through the
// real pkg-config.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/build_options.hpp"
#include "kbuild/environment.hpp"
#include "util/process.hpp"

// "pkg_config": ["zeta >= 3"] in a device file: an SDK that ships a .pc
// file needs no exec script. pkg-config is asked when the device is
// resolved (as an exec provider is), with kbuild's environment, so
// PKG_CONFIG_PATH and the rest are honoured and recorded (--report).
namespace kbuild {

// One entry of "pkg_config": a package, optionally with a version condition.
struct PkgConfigPackage {
  std::string name;       // "zeta"
  std::string condition;  // ">= 3", or "" for any version
  int line = 0;           // where the device file names it
  std::string pointer;    // "/pkg_config/0"

  // As pkg-config takes it: "zeta >= 3".
  std::string spec() const { return condition.empty() ? name : name + " " + condition; }
};

// Reads "zeta", "zeta >= 3" or "zeta>=3" (operators =, ==, !=, <, <=, >,
// >=); nullopt when the text is not one package: a flag ("--static"), two
// names, an operator without a version, a character pkg-config would
// read otherwise ('$', quotes, blanks inside a name).
std::optional<PkgConfigPackage> parse_pkg_config_package(std::string_view text);

// What a failure names: the device and where its file asks for the package.
struct PkgConfigAsker {
  std::string device;       // "acc"
  std::string file;         // the device file
  std::string provider;     // the origin's provider for what is added: "config acc"
  bool check_trust = true;  // refuse a .pc file others could have written
};

// Appends `package`'s cflags and libraries, as pkg-config --cflags and
// --libs print them, to `out`, each entry's origin naming the .pc file (and
// the line of its Cflags: or Libs:). Runs $PKG_CONFIG (default pkg-config)
// through `processes` with `env`, having read pkg-config's variables
// (PKG_CONFIG_PATH, PKG_CONFIG_LIBDIR, ...) through `env`: a report records
// them as the provider's inputs. Throws Error(provider) naming the package
// and what to set when pkg-config is missing, the package is not found, its
// version does not match or pkg-config fails; Error(config) for a .pc file
// others could have written (unless !asker.check_trust).
void add_pkg_config_package(const PkgConfigPackage& package, const PkgConfigAsker& asker,
                            const Environment& env, ProcessRunner& processes, BuildOptions& out);

// Sorts the words pkg-config printed into the 7 lists: -I and -L dirs, -l
// libraries, -D definitions; any other flag goes to cflags (from --cflags)
// or ldflags (from --libs) without its leading '-', with a separate
// argument ("-isystem /x") in the same entry, quoted so Inductor's split
// gives back the same words. Nullopt when the text does not split as shell
// words (an unclosed quote).
std::optional<BuildOptions> pkg_config_flags(const std::string& printed, bool libs,
                                             const Origin& origin);

}  // namespace kbuild
