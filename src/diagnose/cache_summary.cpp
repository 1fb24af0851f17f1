#include "kbuild/cache_summary.hpp"

#include <filesystem>

#include "kbuild/build_context.hpp"
#include "kbuild/cache_root.hpp"
#include "kbuild/error.hpp"
#include "util/byte_size.hpp"

namespace kbuild {

CacheSummary cache_summary(const Environment& env, const std::string& max_size) {
  CacheSummary summary;
  const CacheSettings settings = cache_settings(env, true, max_size);
  summary.directory = settings.root;
  summary.max_bytes = settings.max_bytes;
  if (summary.directory.empty()) throw Error(ErrorKind::usage, kNoCacheRoot);
  std::error_code ec;
  summary.exists = std::filesystem::exists(summary.directory, ec);
  if (!summary.exists) return summary;
  Result<TrustedDir> dir = open_cache_root(summary.directory, false);
  if (!dir) throw Error(ErrorKind::usage, dir.why());
  summary.local = OutputCache::open(settings).stats();
  summary.remote = remote_stats(*dir);
  return summary;
}

std::vector<std::string> cache_summary_lines(const CacheSummary& s) {
  if (!s.exists) return {"no cache yet at " + s.directory};
  return {"cache directory  " + s.directory,
          "entries          " + std::to_string(s.local.entries),
          "size             " + human_size(s.local.bytes) + " of " + human_size(s.max_bytes) +
              " (" + std::to_string(s.local.bytes) +
              " bytes; limit: --cache-max-size or KBUILD_CACHE_MAX_SIZE)",
          "hits             " + std::to_string(s.local.hits),
          "misses           " + std::to_string(s.local.misses),
          "remote hits      " + std::to_string(s.remote.hits),
          "remote misses    " + std::to_string(s.remote.misses),
          "remote errors    " + std::to_string(s.remote.errors),
          "remote down      " + std::to_string(s.remote.bytes_down) + " bytes",
          "remote up        " + std::to_string(s.remote.bytes_up) + " bytes"};
}

nlohmann::ordered_json cache_summary_json(const CacheSummary& s) {
  return {{"directory", s.directory},
          {"exists", s.exists},
          {"entries", s.local.entries},
          {"bytes", s.local.bytes},
          {"max_bytes", s.max_bytes},
          {"hits", s.local.hits},
          {"misses", s.local.misses},
          {"remote",
           {{"hits", s.remote.hits},
            {"misses", s.remote.misses},
            {"errors", s.remote.errors},
            {"bytes_down", s.remote.bytes_down},
            {"bytes_up", s.remote.bytes_up}}}};
}

}  // namespace kbuild
