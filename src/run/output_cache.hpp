// output_cache: the local cache: entries stored and restored whole, with their counters.
#pragma once

#include <sys/stat.h>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"
#include "run/cache_key.hpp"
#include "run/input_manifest.hpp"
#include "util/process.hpp"
#include "util/trusted_dir.hpp"

// Content-addressed cache of build outputs (objects, headers, preprocessed
// files and linked shared libraries). docs/cache.md lists every input of a
// build and where the cache covers it, and the threat model.
//
// An entry is named by the build's local key (cache_key.hpp: the command as
// it runs, the programs, the sources and files the command names, the CPU,
// the working directory, the compiler's environment). The entry's manifest
// records what the key cannot: the headers the compiler read (size, mtime,
// BLAKE2b digest, all hashed and checked to be older than the build), the include
// paths that would shadow each of them if a file appeared there, the
// libraries a link could pick up, and the output's size and BLAKE2b digest. A hit
// re-checks all of it; anything else is a miss.
namespace kbuild {

struct CacheSettings {
  bool enabled = false;                  // asked for (not --no-cache)
  std::string root;                      // "": none could be named
  std::uint64_t max_bytes = 4ull << 30;  // LRU eviction beyond this
  bool compress = false;                 // entries' outputs stored as zstd frames
};

// Whether new entries are stored compressed: only with KBUILD_CACHE_COMPRESS=1
// (a hit of a compressed entry took twice as long: docs/performance.md).
// Both kinds are always read.
bool cache_compression(const Environment& env);

// What the compiler printed, as a hit replays it (ccache and sccache do):
// its stdout and stderr, byte for byte, in the order they came. A build's
// steps add theirs in turn.
struct CompilerOutput {
  struct Piece {
    int stream = 2;  // 1: stdout, 2: stderr
    std::string bytes;
  };
  std::vector<Piece> pieces;
  bool truncated = false;  // more came than was captured: not replayable whole
  // Adds what a run printed (its spans' order; out then err without them).
  void add(const ProcessResult& run);
  std::size_t size() const;
  bool empty() const { return pieces.empty(); }
};

// The most an entry keeps of what the compiler printed (stdout and stderr
// together, before compression; the dependency file's is kMaxDepfile): a
// build that printed more is not stored, so a hit never replays part of it.
inline constexpr std::size_t kMaxCompilerOutput = 1u << 20;

// As an entry's manifest holds it: "" when nothing was printed, else one
// zstd frame of [stream byte, 8-byte length, bytes]...
std::string encode_compiler_output(const CompilerOutput& output);
// A failure says what is wrong: not a zstd frame, a damaged piece, or more
// than kMaxCompilerOutput.
Result<CompilerOutput> decode_compiler_output(std::string_view stored);
// Writes each piece to `out_fd` or `err_fd`, as the compiler did; a
// closed stream loses its bytes, never the build.
void replay_compiler_output(const CompilerOutput& output, int out_fd, int err_fd);

// `manifest` (CBOR) with what a hit gives back besides the output: what
// the compiler printed ("diagnostics", always) and the dependency file it
// wrote ("depfile", when given), each compressed. A failure (nothing to
// store) when either is over its cap (kMaxCompilerOutput, kMaxDepfile).
Result<std::string> with_replay(const std::string& manifest, const CompilerOutput& printed,
                                const std::optional<std::string>& depfile);

// What the build read, for the entry.
struct BuildInputs {
  // observed (input_manifest.hpp: observed_manifest), with_replay's, CBOR
  std::string manifest;
  struct timespec started {};  // file-system time the build started
};

// An entry brought from elsewhere (a remote hit) while it is written:
// staged in the cache's tmp/, its output written through `output` as it
// arrives (OutputCache::stage_entry, install_entry, discard_entry).
struct StagedEntry {
  std::string name;  // under tmp/
  UniqueFd output;
};

// A stored entry's files as they lie: the manifest and the output (a
// compressing cache's zstd frame, its manifest then says "compression").
struct StoredEntry {
  std::string manifest, output;
};

// Why a cache that was asked for is not used, and what to do: a warning
// (it cannot be trusted, or is not kbuild's) or a note (none could be
// named).
struct CacheDisabled {
  std::string why;
  bool warning = false;
};

struct OpenedCache;

class OutputCache {
 public:
  // Opens the cache: a cache that cannot be used (none named, untrusted,
  // not kbuild's) is disabled, and the answer says why and what to do.
  // `create`: make (and mark) a missing cache directory; without it a
  // missing one is simply not used (a dry run writes nothing). `files`:
  // what it states and reads besides its own directory.
  static OpenedCache open(const CacheSettings& settings, bool create = true,
                          const FileSystem& files = system_file_system());

  bool enabled() const { return root_.has_value(); }

  // On a valid, whole hit writes the output to `dest` and returns true (and
  // the entry's manifest into `manifest_out`, when given). A damaged entry is
  // removed.
  // `env`: the compiler's environment, which the manifest's variables are
  // checked against.
  // `stale`, when given, is set on a miss to the input of the entry found
  // that differs now (nullopt: no entry was there to check).
  bool fetch(const std::string& key, const Environment& env, int dest,
             std::string* manifest_out = nullptr, std::optional<StaleInput>* stale = nullptr);

  // Publishes `built` under `key` with what it read. Fails (nothing stored)
  // when an input changed during the build or cannot be read; never leaves
  // a torn entry.
  Status store(const CacheKey& key, int built, const KeyInput& input, const BuildInputs& inputs);

  void count(bool hit);
  CacheStats stats() const;
  // Removes least recently used entries until the cache is under its limit.
  void evict();

  // The opened root (for the PCH and discovery caches); null when disabled.
  const TrustedDir* root() const { return root_ ? &*root_ : nullptr; }
  // What it states and reads besides its own directory (open's `files`).
  const FileSystem& files() const { return *files_; }
  // Whether new entries' outputs are zstd frames (docs/performance.md).
  bool compresses() const { return compress_; }

  // The cache's layout is its own: another layer (the remote cache) stages
  // an entry here, then installs it whole under `key` with its manifest
  // (replacing an older one), or discards it.
  Result<StagedEntry> stage_entry() const;
  Status install_entry(const std::string& key, StagedEntry& staged,
                       std::string_view manifest) const;
  void discard_entry(StagedEntry& staged) const;
  // The entry under `key` as it lies (for an upload); a Failure when it is
  // not there or its output is longer than `max_output`.
  Result<StoredEntry> read_entry(const std::string& key, std::size_t max_output) const;

 private:
  std::optional<TrustedDir> root_;
  std::uint64_t max_bytes_ = 0;
  bool compress_ = false;
  const FileSystem* files_ = &system_file_system();
};

// OutputCache::open's answer: the cache (disabled when it cannot be used)
// and, when one asked for is disabled, why (nothing when it opened, was not
// asked for, or a dry run found none to use).
struct OpenedCache {
  OutputCache cache;
  std::optional<CacheDisabled> disabled;
};

}  // namespace kbuild

// The counters of a cache root's stats.json (local hits and misses, the
// remote cache's hits, misses, errors and bytes): a build adds all of its
// counts in one update, under stats.lock, so concurrent builds lose none.
namespace kbuild {

// Field of stats.json, and how much to add to it.
using CounterIncrements = std::vector<std::pair<std::string, std::uint64_t>>;

// Adds `increments` to stats.json's fields in one locked read, add and
// replace; nothing when all are 0. A damaged stats.json starts again from 0.
// Best effort: a cache that cannot be written loses its counts, never a build.
void add_counters(const TrustedDir& root, const CounterIncrements& increments);

}  // namespace kbuild
