// `kbuild cache stats`: the output cache's directory, entries, size and
// limit, its hits and misses, and the remote cache's counters (kept in the
// same directory), as text or JSON with stable keys (docs/cache.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/output_cache.hpp"
#include "kbuild/remote_cache.hpp"

namespace kbuild {

struct CacheSummary {
  std::string directory;
  bool exists = false;  // false: no cache yet (every count 0)
  std::uint64_t max_bytes = 0;
  CacheStats local;
  RemoteStats remote;
};

// Reads the cache named by the environment; the limit is `max_size`
// (--cache-max-size), else KBUILD_CACHE_MAX_SIZE, else 4G. Creates nothing.
// Throws Error(usage) when no directory can be named, the limit is not a
// size, or the directory is not safe to use.
CacheSummary cache_summary(const Environment& env, const std::string& max_size);

// One line per fact, as `kbuild cache stats` prints them.
std::vector<std::string> cache_summary_lines(const CacheSummary& summary);

// {"directory", "exists", "entries", "bytes", "max_bytes", "hits", "misses",
//  "remote": {"hits", "misses", "errors", "bytes_down", "bytes_up"}}
nlohmann::ordered_json cache_summary_json(const CacheSummary& summary);

}  // namespace kbuild
