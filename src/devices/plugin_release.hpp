// Which of a plugin's known releases kbuild reproduces for the package
// version it found (or did not find), or for the release the user named.
#pragma once

#include <string>

#include "devices/plugin_spec.hpp"

namespace kbuild {

struct ReleaseQuery {
  std::string package;        // "torch_npu": names the package in notes
  std::string installed;      // the package's version file says; "" when not found
  std::string torch_version;  // torch's version.py; "" when unknown
  std::string profile_line;   // the Inductor profile in use ("2.11"): stands in for torch's line
  std::string named;          // the release the user named ("" = none)
  std::string named_by;       // the variable that named it: "KBUILD_TORCH_NPU_RELEASE"
};

struct ReleaseChoice {
  const PluginRelease* release = nullptr;  // nullptr: the plugin declares none
  std::string note;                        // why not the installed one, when it is not
  std::string chosen_by;                   // named_by when the user named it, else ""
  bool guessed = false;  // no version to go by: a guess from torch's line (or the newest)
};

// The named release, else the installed one. A known release (or a version
// a named release lists) is reproduced exactly; a version kbuild does not
// know gets the nearest lower known one, else the oldest, with a note. No
// installed version: the newest release made for torch's line (without a
// torch version, the profile's; a numbered release before a named line such
// as master), else the newest known.
// Throws Error(usage) when `named` is neither a release nor a version.
ReleaseChoice choose_release(const PluginSpec& plugin, const ReleaseQuery& query);

// "2.11.0+cu130" -> "2.11"; "" when it does not start with MAJOR.MINOR.
std::string torch_line_of(const std::string& version);

// The note that says which Inductor profile (`profile_line`) stands in when
// it is not one of the torch lines `release` is made for; "" when it is, or
// when torch's version is unknown.
std::string torch_line_note(const PluginRelease& release, const std::string& package,
                            const std::string& profile_line, const std::string& torch_version);

// "2.13, 2.14, 2.15".
std::string joined_lines(const std::vector<std::string>& lines);

}  // namespace kbuild
