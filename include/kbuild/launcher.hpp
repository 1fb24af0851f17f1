// Compiler launchers (ccache, sccache, distcc, icecc, or any command put
// before the compiler). The known ones cache or distribute compiling only,
// so a source-to-library build is split for them: each source compiled to
// an object through the launcher, then one local link. distcc and icecc
// compile -march=native only on this machine unless it is resolved first.
#pragma once

#include <string>
#include <vector>

#include "kbuild/environment.hpp"

namespace kbuild {

struct Launcher {
  std::vector<std::string> argv;  // empty: none
  // A known compile-only launcher: link steps run locally, and the
  // compiler's input list goes through -MD -MF (they refuse
  // SUNPRO_DEPENDENCIES).
  bool split = false;
  // Sends compiles to other hosts, where -march=native would mean their CPU.
  bool distributes = false;
  // Replace -march=native in the launched compile steps by what it means on
  // this machine (--resolve-native).
  bool resolve_native = false;
  std::string name() const;  // the program's file name, "" when none
};

// Parses --launcher (or a device file's "launcher"): words split like a
// shell; known names recognised. Throws Error(usage) for an unbalanced quote.
Launcher parse_launcher(const std::string& text);

// The flags -march=native stands for with `compiler` on this machine (from
// `compiler -### -march=native`); empty when they cannot be read.
std::vector<std::string> resolve_native_flags(const std::string& compiler, const Environment& env);

}  // namespace kbuild
