// input_manifest: a cache entry's manifest (manifest.hpp) made of what a build was observed
// to do, checked on a hit, restamped and shared across machines.
#pragma once

#include <sys/stat.h>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "run/early_digests.hpp"
#include "run/manifest.hpp"
#include "run/observation.hpp"
#include "util/file_system.hpp"
#include "util/trusted_dir.hpp"

// What a cached build read, recorded so that a hit can check it still
// holds: the files (path, size, mtime, BLAKE2b digest), the paths that
// would shadow a header if they appeared, and the libraries a link could pick up. Stored
// as CBOR in the cache entry's manifest (docs/cache.md).
namespace kbuild {

// A file's size and mtime in ns (-1 each when it cannot be stat'ed).
struct FileStamp {
  std::int64_t size = -1;
  std::int64_t mtime_ns = -1;
};
FileStamp stamp(const FileSystem& files, const std::string& path);
// "path:size:mtime", for a key.
std::string stamp_text(const FileSystem& files, const std::string& path);

// Whether `a` is after `b` (file times and the build's start, both from the
// kernel's coarse clock).
bool later(const struct timespec& a, const struct timespec& b);

// Which kind of input of a manifest no longer holds (KBUILD_LOG's names).
enum class StaleKind : std::uint8_t {
  file_changed,      // a file read has other content, or is gone
  path_appeared,     // a path looked for and not found exists now
  variable_differs,  // a variable read has another value, or is set or unset now
  listing_changed,   // a directory listed has other names
  library_changed,   // a library a link could pick up changed
  damaged,           // the manifest itself cannot be read
};
const char* stale_kind_name(StaleKind kind);

// The first input found that no longer holds: its kind and the path (the
// variable's name, never its value, which may be a secret).
struct StaleInput {
  StaleKind kind = StaleKind::damaged;
  std::string what;
};
// For people: "PATH changed", "PATH appeared", "variable NAME differs", ...
std::string describe(const StaleInput& stale);

// Whether every file of a manifest is unchanged (same size and mtime, else
// the same content), every absent path is still absent, every variable has
// the same value in `env` (the compiler's environment), every listed
// directory has the same names and no library changed. A damaged manifest
// counts as changed.
// Everything is stated and read in `files`.
bool inputs_unchanged(const std::string& bytes, const Environment& env, const FileSystem& files);
// The index of the first of `inputs` (in their order) that changed: its
// size or mtime differ and so does its content, or it is gone; nullopt
// when all hold. Each file is stat'ed by its name in its directory, opened
// once for the files in it; with `sweeps` 2 a second thread takes the
// first half of the list.
std::optional<std::size_t> first_changed_input(const std::vector<ManifestInput>& inputs,
                                               unsigned sweeps, const FileSystem& files);
// From how many files a hit sweeps them on two threads.
inline constexpr std::size_t kTwoSweepFiles = 1024;
// From this many files read and absent paths each, a hit checks the
// absences on a thread beside the files' sweep (a real Inductor kernel:
// 522 files, 2,173 absent paths).
inline constexpr std::size_t kAbsencesBeside = 256;
// The first input of a manifest already read that no longer holds (in the
// order above: variables, files, absent paths, listings, libraries);
// nullopt when all hold (a caller that reads other fields of it reads it once).
std::optional<StaleInput> manifest_stale(const Manifest& manifest, const Environment& env,
                                         const FileSystem& files);
inline bool manifest_holds(const Manifest& manifest, const Environment& env,
                           const FileSystem& files) {
  return !manifest_stale(manifest, env, files);
}

// For an entry another machine wrote (the remote cache): whether every
// file of the manifest has the same content here (its stamps prove
// nothing: another machine's mtime can equal this one's for other bytes,
// as in images and archives that fix mtimes), no shadowing path exists and
// no library changed. When all hold, the manifest is given this machine's
// stamps of the files and directories, as a local entry records them, and
// nullopt is returned; else the input that differs here.
// The variables are checked against `env` too, but kMachineVariables, which
// differ from machine to machine, are recorded as this machine has them.
std::optional<StaleInput> restamp_here(Manifest& manifest, const Environment& env,
                                       const FileSystem& files);

// The manifest as machines share it: without this machine's directory
// stamps, its kMachineVariables' values replaced by kMachineValue.
void make_shareable(Manifest& manifest);

// What a build's observation is read against.
struct ObservedBuild {
  // The build's private work directory: what is read there is not an
  // input; what is written there, other than `own_files` and the
  // observer's records (observed.*), is a side output that would be lost.
  std::string work_dir;
  std::vector<std::string> own_files;
  // The programs the key names (the compiler, a launcher): keyed by their
  // stamps here and by content across machines, where their paths differ.
  std::vector<std::string> key_programs;
  const Environment* env = nullptr;   // the compiler's, without the observer's variables
  struct timespec started {};         // file-system time the build started
  const TrustedDir* cache = nullptr;  // where large files' digests are remembered
  // Files hashed while the compiler ran: used for the version that was read.
  const EarlyDigests* early = nullptr;
  // What is stated and read (the build's session's; tests pass a fake).
  const FileSystem* files = &system_file_system();
};

// From this size a file's digest is remembered in the cache (under its
// identity: path, device, inode, size, mtime, ctime) rather than hashed on
// every miss: a lookup is a few system calls, hashing 64 KiB about 0.1 ms.
// The toolchain's libraries (cc1plus's and ld's, 60-220 KiB each) were
// a megabyte hashed on every miss of a small kernel.
inline constexpr std::size_t kRememberDigestFrom = std::size_t{64} * 1024;

// The manifest of what the build was observed to do (observation.hpp): the
// files it read (with digests), the paths it looked for and did not find
// (with their directories' stamps), the variables it read from the compiler's
// environment, the directories it listed. A failure, and so nothing stored,
// when it cannot be trusted: a program ran that could not be observed, a
// file was written besides the output (a side output: the compile is run as
// it is), or an input changed or appeared during the build.
// Why a build was compiled but not stored (stats.json's uncacheable_NAME
// counters, KBUILD_LOG's "uncacheable").
enum class Uncacheable : std::uint8_t {
  unobserved,     // a program of the build could not be observed
  side_output,    // it wrote a file besides its output
  input_changed,  // an input changed, appeared or went during the build
  clock,          // it read __DATE__ or __TIME__ without SOURCE_DATE_EPOCH
  unkeyed,        // an input the key names cannot be read
  not_stored,     // the storage refused it (a write failed, a source changed)
};
const char* uncacheable_name(Uncacheable reason);

// `reason`, when given, is set to the failure's kind.
Result<std::string> observed_manifest(const Observation& observed, const ObservedBuild& build,
                                      Uncacheable* reason = nullptr);

// Variables whose value is this machine's: the programs PATH led to are
// inputs by content, and the working directory matters only for debug info,
// which the shareable key covers. Compared on this machine, never across
// machines (a remote entry stores them as kMachineValue).
inline constexpr const char* kMachineVariables[] = {"PATH", "PWD"};
inline constexpr const char* kMachineValue = "<this machine's>";

// Variables that only shape how the compiler's diagnostics look or how many
// jobs it runs, never what it writes: read, but not inputs.
inline constexpr const char* kPresentationVariables[] = {
    "TERM",      "COLUMNS", "GCC_COLORS", "GCC_URLS", "TERM_URLS", "GCC_EXTRA_DIAGNOSTIC_OUTPUT",
    "MAKEFLAGS", "MFLAGS",  "MAKELEVEL"};

// The largest dependency file an entry keeps (before compression): a
// build whose list is longer is not stored.
inline constexpr std::size_t kMaxDepfile = 4u << 20;

// `depfile` (make's syntax) with each path that is `from` or lies under it
// moved under `to`, both written as make quotes them.
std::string rebase_depfile(const std::string& depfile, const std::string& from,
                           const std::string& to);

// The manifest with every recorded path (inputs, absent, libraries, dirs,
// listings, a variable's value) that is `from` or lies under it moved
// under `to` instead: the remote cache's base-dir opt-in stores a writer's
// paths as "<base>/..." and a reader checks its own; its dependency file's
// paths too. False (the manifest half moved) when its dependency file is
// damaged.
bool rebase_manifest(Manifest& manifest, const std::string& from, const std::string& to);
// The same for a manifest's bytes; nullopt when they are damaged.
std::optional<std::string> rebase_manifest(const std::string& bytes, const std::string& from,
                                           const std::string& to);

}  // namespace kbuild
