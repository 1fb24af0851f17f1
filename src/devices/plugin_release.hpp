// Which of a plugin's known releases kbuild reproduces for the package
// version it found (or did not find).
#pragma once

#include <string>

#include "kbuild/plugin_spec.hpp"

namespace kbuild {

struct ReleaseChoice {
  const PluginRelease* release = nullptr;  // nullptr: the plugin declares none
  std::string note;                        // why not the installed one, when it is not
};

// The installed release when known; a release kbuild does not know: the
// nearest lower known release of its line, else the line's oldest; no
// installed version (or an unknown line): the newest known release of
// torch's line, else the newest known. `package` names the package in notes.
ReleaseChoice choose_release(const PluginSpec& plugin, const std::string& package,
                             const std::string& installed, const std::string& torch_version);

}  // namespace kbuild
