#include "run/cache_stats.hpp"

#include <filesystem>

#include "kbuild/error.hpp"
#include "run/output_cache.hpp"
#include "run/remote_cache.hpp"
#include "run/run_settings.hpp"
#include "util/text.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

CacheSummary cache_summary(const Environment& env, const std::string& max_size,
                           const FileSystem& files) {
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
  summary.local = OutputCache::open(settings, true, files).cache.stats();
  summary.remote = remote_stats(*dir);
  return summary;
}

namespace {

nlohmann::ordered_json uncacheable_json(const CacheStats& local) {
  nlohmann::ordered_json reasons = nlohmann::ordered_json::object();
  for (const auto& [reason, n] : local.uncacheable_by_reason) reasons[reason] = n;
  return {{"total", local.uncacheable}, {"reasons", reasons}};
}

// " (side_output 2, clock 1)": the uncacheable builds by reason, if any.
std::string uncacheable_reasons(const CacheStats& local) {
  std::string text;
  for (const auto& [reason, n] : local.uncacheable_by_reason)
    text += (text.empty() ? " (" : ", ") + reason + " " + std::to_string(n);
  return text.empty() ? text : text + ")";
}

}  // namespace

std::vector<std::string> cache_summary_lines(const CacheSummary& s) {
  if (!s.exists) return {"no cache yet at " + s.directory};
  return {"cache directory  " + s.directory,
          "entries          " + std::to_string(s.local.entries),
          "size             " + human_size(s.local.bytes) + " of " + human_size(s.max_bytes) +
              " (" + std::to_string(s.local.bytes) +
              " bytes; limit: --cache-max-size or KBUILD_CACHE_MAX_SIZE)",
          "local hits       " + std::to_string(s.local.hits),
          "remote hits      " + std::to_string(s.remote.hits),
          "misses           " + std::to_string(s.local.misses),
          "uncacheable      " + std::to_string(s.local.uncacheable) + uncacheable_reasons(s.local),
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
          {"uncacheable", uncacheable_json(s.local)},
          {"remote",
           {{"hits", s.remote.hits},
            {"misses", s.remote.misses},
            {"errors", s.remote.errors},
            {"bytes_down", s.remote.bytes_down},
            {"bytes_up", s.remote.bytes_up}}}};
}

}  // namespace kbuild
