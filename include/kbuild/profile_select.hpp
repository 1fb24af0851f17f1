// Which Inductor profile a run uses: the line of the torch kbuild found
// (TORCH_ROOT/version.py, read, never imported) or of --torch-version; a
// line with no profile gets the nearest older one, with a note.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kbuild/paths.hpp"
#include "kbuild/profile.hpp"

namespace kbuild {

struct ProfileChoice {
  std::shared_ptr<const Profile> profile;
  std::string torch_version;        // what it was chosen for ("" when no torch version is known)
  std::string chosen_by;            // "--torch-version", "TORCH_ROOT/version.py" or "default"
  std::optional<std::string> note;  // the nearest profile stood in for the line
};

// "2.9.1+cu130" -> "2.9"; nullopt unless it starts with MAJOR.MINOR digits.
std::optional<std::string> inductor_line_of(const std::string& version);

// Whether `text` is X.Y or X.Y.Z (digits), as --torch-version takes.
bool is_torch_version(const std::string& text);

// `torch_version` ("" = unknown: 2.11, today's line) picks the profile in `dir`.
// Throws Error(config) when a profile file is bad or missing. With a
// `cache_root`, the parsed profile is remembered there (profile_cache.hpp).
ProfileChoice choose_profile(const std::string& dir, const std::string& torch_version,
                             const std::string& chosen_by, const std::string& cache_root = "");

// --torch-version when given, else TORCH_ROOT/version.py when torch was found.
ProfileChoice choose_profile_for(const std::string& dir, const std::string& torch_version_option,
                                 const Paths& paths, const std::string& cache_root = "");

// "2.11 (torch 2.11.0, TORCH_ROOT/version.py)": how --version, doctor and
// --report name it.
std::string describe(const ProfileChoice& choice);

}  // namespace kbuild
