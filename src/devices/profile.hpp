// profile: a torch line's build rules (profiles), parsed, remembered and chosen for the torch
// installed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "site/site.hpp"
#include "util/file_system.hpp"

// An Inductor profile: what the base and torch layers add for one Inductor
// line (configs/profiles/<line>.json), as data. The assembly code reads it;
// no version-specific flag list lives in C++.
namespace kbuild {

// One entry of a profile list, with the conditions under which it applies
// (all must hold) and where it was written.
struct ProfileEntry {
  std::string value;
  std::vector<std::string> when;  // atoms, "!atom" negates (see profile_atoms())
  std::string file;
  int line = 0;
};

struct ProfileIsa {
  std::vector<std::string> macros;
  std::string flags;  // one passthrough entry; "" still adds it (neon)
  std::string file;
  int line = 0;
};

struct Profile {
  std::string name;     // the Inductor line, "2.11"
  std::string file;     // the file that defines it (extends: the child)
  std::string extends;  // the parent line, "" for none
  std::string description;
  std::map<std::string, std::string> provenance;  // repository, commit, release, evidence
  std::map<std::string, std::string> sources;     // list -> "file:line" of the release
  bool link_before_output = false;                // 2.6/2.7: ... LIBS LIBDIRS -o OUT
  bool single_spaced = false;                     // 2.6/2.7: Inductor's line has single spaces
  bool gcc_by_name = false;  // 2.6: "g++" anywhere in the path is gcc (clang++ too)
  // "base.cflags", "torch.definitions", "torch.include_dirs", "torch.cflags",
  // "torch.libraries_dirs", "torch.libraries", "torch.passthrough_args",
  // "device.libraries" (every device), "cuda.libraries".
  std::map<std::string, std::vector<ProfileEntry>> lists;
  std::map<std::string, ProfileIsa> isa;  // by isa_name(); a missing kind has no flags
  std::optional<ProfileEntry> isa_bf16, isa_fp16;
  bool cuda_stubs = true;          // CUDA's lib/stubs dir appended (2.7 and later)
  std::vector<std::string> chain;  // the files read: this line's, then what it extends
};

// What the conditions of profile entries test.
struct ProfileFacts {
  bool link = true;
  bool debug = false;
  bool min_optimize = false;
  bool warning_all = true;
  bool aot = false;
  bool torch = true;  // torch found
  std::string compiler = "g++";
  std::string machine = "x86_64";
  const Environment* env = nullptr;  // for raise_error_on_ignored_optimization
};

// The atoms a "when" may use (machine=NAME besides these).
const std::set<std::string>& profile_atoms();

// Whether every condition of `entry` holds.
bool profile_applies(const Profile& profile, const ProfileEntry& entry, const ProfileFacts& facts);

// The entries of `list` that apply ("" entries included).
std::vector<const ProfileEntry*> profile_entries(const Profile& profile, const std::string& list,
                                                 const ProfileFacts& facts);

// The entry's value, each ${env:NAME} replaced by that variable's value ("" when unset):
// torch 2.13's -march=${env:TORCHINDUCTOR_CPP_MARCH}.
std::string profile_value(const ProfileEntry& entry, const ProfileFacts& facts);

// Loads `<dir>/<line>.json` and what it extends. Throws Error(config)
// "file:line:column: at /pointer: what" for an unknown key, a wrong type, an
// unknown condition, a missing parent or an extends cycle. With
// `check_trust` (off: --allow-untrusted-device-files), every file of the
// chain gets the device-file rule (check_trusted_opened_file: the file, its
// directory and the directories above, ACLs included), else Error(config).
Profile load_profile(const std::string& dir, const std::string& line, bool check_trust = true);

// The lines with a profile file in `dir`, oldest first ("2.6", "2.7", ...).
std::vector<std::string> profile_lines(const std::string& dir);

// The profiles directory: <data dir>/profiles (KBUILD_DATA_DIR honoured).
std::string profiles_dir(const Environment& env);

// The profile used when none was chosen (2.11), loaded once per process.
std::shared_ptr<const Profile> default_profile();

}  // namespace kbuild

// Which Inductor profile a run uses: the line of the torch kbuild found
// (TORCH_ROOT/version.py, read, never imported) or of --torch-version; a
// line with no profile gets the nearest older one, with a note.
namespace kbuild {

struct ProfileChoice {
  std::shared_ptr<const Profile> profile;
  std::string torch_version;        // what it was chosen for ("" when no torch version is known)
  std::string chosen_by;            // "--torch-version", "TORCH_ROOT/version.py" or "default"
  std::optional<std::string> note;  // the nearest profile stood in for the line
  // What the profile in use rests on: its provenance's label ("measured", "executed",
  // "derived from release files", ...), or "stand-in: profile L (its label) for torch X.Y".
  std::string evidence;
};

// "2.9.1+cu130" -> "2.9"; nullopt unless it starts with MAJOR.MINOR digits.
std::optional<std::string> inductor_line_of(const std::string& version);

// Whether `text` is X.Y or X.Y.Z (digits), as --torch-version takes.
bool is_torch_version(const std::string& text);

// `torch_version` ("" = unknown: 2.11, today's line) picks the profile in `dir`.
// Throws Error(config) when a profile file is bad or missing. With a
// `cache_root`, the parsed profile is remembered there (util/parsed_file_cache.hpp).
ProfileChoice choose_profile(const std::string& dir, const std::string& torch_version,
                             const std::string& chosen_by, const std::string& cache_root = "",
                             bool check_trust = true,
                             const FileSystem& files = system_file_system());

// --torch-version when given, else TORCH_ROOT/version.py when torch was found.
ProfileChoice choose_profile_for(const std::string& dir, const std::string& torch_version_option,
                                 const Paths& paths, const std::string& cache_root = "",
                                 bool check_trust = true,
                                 const FileSystem& files = system_file_system());

// "2.11 (torch 2.11.0, TORCH_ROOT/version.py)": how --version, doctor and
// --report name it.
std::string describe(const ProfileChoice& choice);

}  // namespace kbuild

// A parsed Inductor profile remembered between runs: the JSON of a profile
// and its extends chain is parsed and validated once, and later runs read
// the result back (parsed_file_cache.hpp) while every file of the chain and
// kbuild itself keep their identity.
namespace kbuild {

// load_profile(dir, line), through the cache under `cache_root` ("", or a
// root that does not exist yet, caches nothing). A missing, foreign, corrupt
// or stale entry is ignored and the files parsed again; errors are
// load_profile's.
Profile load_profile_cached(const std::string& dir, const std::string& line,
                            const std::string& cache_root, bool check_trust = true,
                            const FileSystem& files = system_file_system());

// The bytes a cache entry holds for `profile`, and back; decoding fails
// (nullopt) on anything malformed.
std::string encode_profile(const Profile& profile);
std::optional<Profile> decode_profile(const std::string& bytes);

}  // namespace kbuild
