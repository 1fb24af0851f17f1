// cache_stats: `kbuild cache stats`: the output cache's and the remote cache's counts, read
// without changing the cache.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kbuild/answers.hpp"
#include "kbuild/environment.hpp"
#include "util/file_system.hpp"

// `kbuild cache stats`: the output cache's directory, entries, size and
// limit, its hits and misses, and the remote cache's counters (kept in the
// same directory), as text or JSON with stable keys (docs/cache.md).
namespace kbuild {

// Reads the cache named by the environment; the limit is `max_size`
// (--cache-max-size), else KBUILD_CACHE_MAX_SIZE, else 4G. Creates nothing.
// Throws Error(usage) when no directory can be named, the limit is not a
// size, or the directory is not safe to use.
CacheSummary cache_summary(const Environment& env, const std::string& max_size,
                           const FileSystem& files = system_file_system());

// One line per fact, as `kbuild cache stats` prints them.
std::vector<std::string> cache_summary_lines(const CacheSummary& summary);

// {"directory", "exists", "entries", "bytes", "max_bytes", "hits", "misses",
//  "remote": {"hits", "misses", "errors", "bytes_down", "bytes_up"}}
nlohmann::ordered_json cache_summary_json(const CacheSummary& summary);

}  // namespace kbuild
