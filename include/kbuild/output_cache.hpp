// Content-addressed cache of build outputs (objects, headers, preprocessed
// files and linked shared libraries).
//
// The key covers everything that changes the output: the argv without the
// output path, the compiler's identity (path, size, mtime), the bytes of
// every source, the CPU (for -march=native), the linked libraries found in
// the -L dirs (path, size, mtime), the working directory and the compiler's
// environment variables that change what it reads. On a miss the compiler
// also writes the headers it read (SUNPRO_DEPENDENCIES, so argv is
// unchanged); they are recorded in the entry's manifest and re-validated on
// every hit (size and mtime, else content), like ccache's direct mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/build_plan.hpp"
#include "kbuild/environment.hpp"

namespace kbuild {

struct CacheSettings {
  bool enabled = false;
  std::string root;                      // <root>/objects/ab/<key>/{output,manifest.json}
  std::uint64_t max_bytes = 4ull << 30;  // LRU eviction beyond this
};

struct CacheStats {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
};

class OutputCache {
 public:
  explicit OutputCache(CacheSettings settings) : s_(std::move(settings)) {}

  bool enabled() const { return s_.enabled; }

  // The key of `plan`; nullopt when it cannot be cached (e.g. a source that
  // cannot be read).
  std::optional<std::string> key(const BuildPlan& plan, const std::vector<std::string>& sources,
                                 const std::string& compiler_path, const Environment& env) const;

  // On a valid hit, copies the output to `dest` and returns true.
  bool fetch(const std::string& key, const std::string& dest);

  // Publishes `built` under `key`, with the headers listed in `depfile`
  // (a make rule; a link of objects alone reads no headers and has none).
  // Never publishes a torn entry: the entry directory is renamed into place
  // whole. Returns false when it was not stored.
  bool store(const std::string& key, const std::string& built, const std::string& depfile,
             bool needs_depfile);

  // Counts a hit or a miss in the statistics.
  void count(bool hit);
  CacheStats stats() const;
  void clear();
  // Removes least recently used entries until the cache is under its limit.
  void evict();

 private:
  std::string entry_dir(const std::string& key) const;
  CacheSettings s_;
};

// The paths a make-style dependency file lists (after the first ':').
std::vector<std::string> parse_depfile(const std::string& text);

// A record of the files a build read (from its depfile): path, size, mtime
// and SHA-1 of each, as JSON text; nullopt when one cannot be read.
std::optional<std::string> input_manifest(const std::string& depfile_text);
// Whether every file of a manifest is unchanged (same size and mtime, else
// the same content). A damaged manifest counts as changed.
bool inputs_unchanged(const std::string& manifest_text);

}  // namespace kbuild
