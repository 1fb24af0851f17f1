// cache_key: the one cache key: the command, the sources and the programs it names; what the
// build reads besides is observed (input_manifest).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbuild/error.hpp"
#include "run/early_digests.hpp"
#include "util/file_system.hpp"
#include "util/trusted_dir.hpp"

// The keys of a build, one module for every way in (a build, build-many's
// children, `kbuild cc` and the masquerade links): made from the argv as it
// runs (the output path left out), the sources and the programs it starts.
// The local key names this machine's programs by their stamps; the
// shareable key (the remote cache's) names them by content and leaves out
// what is machine-local. Everything the build was observed to read, look
// for, run and ask the environment goes into the entry's manifest
// (input_manifest.hpp), which every hit checks. docs/cache.md's table of
// inputs says which part covers what.
namespace kbuild {

// Everything a key is made of, besides the sources' bytes.
struct KeyInput {
  std::vector<std::string> argv;  // as it runs, launcher first
  std::size_t output_index = 0;   // argv[output_index] is the output (left out)
  std::string output;             // its extension can matter to the compiler
  std::vector<std::string> sources;
  std::vector<std::string> programs;  // resolved compiler and launcher paths
  std::vector<std::string> extra;     // e.g. a precompiled header's identity
};

struct CacheKey {
  std::string hex;
  // The digest of each source as hashed into the key (compared after the
  // build: a source edited while the compiler ran is never stored).
  std::vector<std::string> source_digest;
};

// The key of a build; a Failure when it cannot be cached (a source cannot be
// read: "SOURCE: " and why). Everything else the build reads, looks for or
// asks the environment is observed and checked through the entry's manifest
// (input_manifest.hpp).
Result<CacheKey> cache_key(const KeyInput& input, const FileSystem& files);

// The CPU as -march=native sees it: the machine and its feature flags.
std::string cpu_identity();

// What a caller knows is machine-local in a KeyInput (a --pch header's
// place in this machine's cache, and its identity there).
struct ShareableParts {
  std::vector<std::string> extra;  // replaces KeyInput::extra when given
  // Each occurrence of `first` in the command becomes `second`, unless the
  // command asks for debug info (which records the real path).
  std::vector<std::pair<std::string, std::string>> rewrites;
  // The remote cache's base-dir opt-in (KBUILD_REMOTE_CACHE_BASE_DIR): each
  // path the compiler reads or writes under it (an -I dir, a source, -o...)
  // is keyed as kBasePlaceholder + the rest, debug info or not, so build
  // trees at different paths share a key. Other words (-Wp,-D..., a macro's
  // value) are keyed as written.
  std::string base_dir;
};

// What a path under the base dir is keyed and recorded as.
inline constexpr const char* kBasePlaceholder = "<base>";

// `word` with each path that is `base` or lies under it (at the word's
// start, after '=', ',' or ':', or after a two-letter option such as -I)
// written as kBasePlaceholder + the rest.
std::string rebase_word(std::string word, const std::string& base);

// The key shared across machines: the command, the sources' bytes, the
// compiler and launcher by content, the working directory only for debug
// info, the CPU only for -march/-mcpu/-mtune=native. A Failure when a source
// cannot be read (as cache_key's). With `cache`, a program's content hash
// is remembered there (program_hash).
Result<std::string> shareable_key(const KeyInput& input, const FileSystem& files,
                                  const ShareableParts& parts = {},
                                  const TrustedDir* cache = nullptr);

// A --pch header's parts of the shared keys. The kernels' name, instead of
// this machine's .gch, the header build's shared key and the files the .gch
// was built from (each path and digest), and the header's place
// `include` as "<pch>".
ShareableParts pch_kernel_parts(const std::string& header_shared_key,
                                const std::vector<std::pair<std::string, std::string>>& inputs,
                                const std::string& include);
// The header build's own: the copy's place in this machine's cache (the
// header `include`, its directory `dir`, both named by the local key
// `local_key`) as placeholders.
ShareableParts pch_header_parts(const std::string& include, const std::string& dir,
                                const std::string& local_key);

// The key `kbuild isa` shares its probes' answers under: every input of
// the probes by content or by the path the command names, kbuild's version
// (its probe programs) and the CPU, so only an identical machine gets them.
struct IsaAnswerKeyInput {
  std::string format;          // the answers' format ("kbuild-isa-answers 1")
  std::string compiler_hash;   // the compiler by content (program_hash)
  std::string compiler_name;   // as the request names it
  std::string machine;         // the request's -march (or "")
  std::string profile_digest;  // the profile's rules, encoded and hashed
  std::string torch_root;
  std::string version_py_digest;              // torch's version.py
  std::string python_include, python_libdir;  // "-" when not found
  bool loaded = false;                        // the probes are loaded, not only built
  std::string ld_library_path;
  std::string cpu;  // the CPU's identity (the machine and every flag)
};
std::string isa_answer_key(const IsaAnswerKeyInput& input);

// Where a remote entry and a compile lease are stored under the shared key
// (shareable_key, or isa_answer_key): the format's number is in the entry's
// name, so an older kbuild never reads (or drops as damaged) a newer one's
// entries. Redis: kbuild:entry:4:KEY and kbuild:lease:KEY; HTTP:
// PATH/kbuild-entry-4-KEY.
std::string redis_entry_name(const std::string& shared_key);
std::string redis_lease_name(const std::string& shared_key);
std::string http_entry_name(const std::string& shared_key);

}  // namespace kbuild

// What the files a compile read ask of the world that the observer cannot
// see: the date and time (__DATE__, __TIME__, __TIMESTAMP__; the compiler
// reads the clock on every run, so reading it says nothing). A cheap scan of
// their bytes at store time; a hit never scans.
namespace kbuild {

// The first of `files` (regular text files, with no NUL byte in their first
// 8 KiB; others are skipped) naming
// __DATE__, __TIME__ or __TIMESTAMP__ outside comments and literals, or "".
std::string clock_user(const FileSystem& files, const std::vector<std::string>& paths,
                       const EarlyDigests* early = nullptr);

}  // namespace kbuild
