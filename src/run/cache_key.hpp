// cache_key: the one cache key: the command, the inputs it reads (headers found by scanning), the
// compiler.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbuild/environment.hpp"
#include "util/trusted_dir.hpp"

// The keys of a build, one module for every way in (a build, build-many's
// children, `kbuild cc` and the masquerade links): made from the argv as it
// runs (the output path left out) and every input the command names that
// the compiler or linker reads. The local key names this machine's files
// by their stamps; the shareable key (the remote cache's) names programs
// and files by content and leaves out what is machine-local. What a build
// read besides (headers, libraries found) goes into the entry's manifest
// (output_cache). docs/cache.md's table of inputs is this module's list,
// and tests/unit/cache_inputs_doc_test.cpp walks it.
namespace kbuild {

// Everything a key is made of, besides the sources' bytes.
struct KeyInput {
  std::vector<std::string> argv;  // as it runs, launcher first
  std::size_t output_index = 0;   // argv[output_index] is the output (left out)
  std::string output;             // its extension can matter to the compiler
  std::vector<std::string> sources;
  std::vector<std::string> programs;  // resolved compiler and launcher paths
  std::vector<std::string> extra;     // e.g. a precompiled header's identity
  bool links = false;
  std::vector<std::string> libraries, libraries_dirs;  // -l and -L of a link
};

struct CacheKey {
  std::string hex;
  // SHA-1 of each source as hashed into the key (compared after the build:
  // a source edited while the compiler ran is never stored).
  std::vector<std::string> source_digest;
};

// The key of a build; nullopt when it cannot be cached (a source or a file
// named on the command line cannot be read).
std::optional<CacheKey> cache_key(const KeyInput& input, const Environment& env);

// Variables that change what g++ (and the programs it runs) reads or
// writes; PATH too, which a local key adds and a shareable one leaves out.
inline constexpr const char* kCompilerVariables[] = {"CPATH",
                                                     "CPLUS_INCLUDE_PATH",
                                                     "C_INCLUDE_PATH",
                                                     "OBJC_INCLUDE_PATH",
                                                     "LIBRARY_PATH",
                                                     "GCC_EXEC_PREFIX",
                                                     "COMPILER_PATH",
                                                     "SOURCE_DATE_EPOCH",
                                                     "LANG",
                                                     "LC_ALL",
                                                     "LC_CTYPE",
                                                     "GCC_COMPARE_DEBUG",
                                                     "DEPENDENCIES_OUTPUT",
                                                     "SUNPRO_DEPENDENCIES"};

// Files a command line names whose bytes the compiler reads but that no
// depfile lists: response files, specs files, plugins.
std::vector<std::string> named_files(const std::vector<std::string>& argv);

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
  // path under it is keyed as kBasePlaceholder + the rest, debug info or
  // not, so build trees at different paths share a key.
  std::string base_dir;
};

// What a path under the base dir is keyed and recorded as.
inline constexpr const char* kBasePlaceholder = "<base>";

// `word` with each path that is `base` or lies under it (at the word's
// start, after '=', ',' or ':', or after a two-letter option such as -I)
// written as kBasePlaceholder + the rest.
std::string rebase_word(std::string word, const std::string& base);

// The key shared across machines: the command, the sources' and named
// files' bytes, the compiler and launcher by content, the compiler's
// environment less PATH, the working directory only for debug info, the CPU
// only for -march/-mcpu/-mtune=native. nullopt when a file cannot be read.
// With `cache`, a program's content hash is remembered there (program_hash).
std::optional<std::string> shareable_key(const KeyInput& input, const Environment& env,
                                         const ShareableParts& parts = {},
                                         const TrustedDir* cache = nullptr);

}  // namespace kbuild

// What the files a compile read ask of the world that no dependency list
// names: the date and time (__DATE__, __TIME__, __TIMESTAMP__), files pulled
// in by the assembler (.incbin in an asm statement), and headers whose mere
// existence was asked (__has_include, __has_include_next). A cheap scan of
// their bytes at store time; a hit never scans.
namespace kbuild {

struct HasIncludeProbe {
  std::string name;  // as written between the quotes or brackets
  bool quoted = false;
  std::string from;  // the file that asks (a quoted name is looked for beside it)
};

struct SourceScan {
  std::string uses_clock;  // the first file naming __DATE__/__TIME__/__TIMESTAMP__, or ""
  std::string incbin;      // the first file with an .incbin, or ""
  std::vector<HasIncludeProbe> probes;
};

SourceScan scan_sources(const std::vector<std::string>& files);

// The paths where each probe's name could have been found, in the order the
// compiler looks (beside the asking file for a quoted name, then `search`),
// up to and including the first that exists: the ones absent must stay so,
// the one present must stay present.
struct ProbeRecords {
  std::vector<std::string> absent, present;
};
ProbeRecords probe_records(const std::vector<HasIncludeProbe>& probes,
                           const std::vector<std::string>& search);

}  // namespace kbuild
