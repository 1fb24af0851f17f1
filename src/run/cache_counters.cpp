#include "run/cache_counters.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "util/file_util.hpp"
#include "util/json_locations.hpp"
#include "util/json_text.hpp"

namespace kbuild {

namespace {

constexpr const char* kStats = "stats.json";

nlohmann::json read_counters(const TrustedDir& root) {
  Result<std::string> text = root.read(kStats, 1 << 16);
  if (!text) return nlohmann::json::object();
  try {
    nlohmann::json stats = parse_json_text(*text);
    return stats.is_object() ? stats : nlohmann::json::object();
  } catch (const JsonSyntaxError&) {  // damaged: counting starts again
  } catch (const nlohmann::json::exception&) {
  }
  return nlohmann::json::object();
}

// Puts `tmp` in place of stats.json. A plain rename over an existing file
// makes ext4 (auto_da_alloc) start writing the new file out first, about 2
// ms per rename on the development VM, so the two are exchanged instead and
// the old one removed: a reader still sees the old file or the new one,
// whole. The counters need no such care after a crash (a damaged or empty
// stats.json counts from 0 again). Anything but a regular file there, or a
// file system without exchange: the plain rename.
Status replace_stats(const TrustedDir& root, const std::string& tmp) {
  std::optional<struct stat> old = root.status(kStats);
  if (old && S_ISREG(old->st_mode) &&
      ::renameat2(root.fd(), tmp.c_str(), root.fd(), kStats, RENAME_EXCHANGE) == 0)
    return root.remove_file(tmp);
  return root.rename(tmp, kStats);
}

Status write_counters(const TrustedDir& root, const nlohmann::json& stats) {
  const std::string tmp = std::string(".") + kStats + ".tmp." + unique_suffix();
  Result<UniqueFd> fd = root.create_file(tmp, 0644);
  if (!fd) return Failure{fd.why()};
  Status written = write_all(fd->get(), stats.dump(), root.path() + "/" + tmp);
  fd->reset();
  if (written) written = replace_stats(root, tmp);
  if (!written) (void)root.remove_file(tmp);
  return written;
}

}  // namespace

void add_counters(const TrustedDir& root, const CounterIncrements& increments) {
  if (std::all_of(increments.begin(), increments.end(),
                  [](const auto& i) { return i.second == 0; }))
    return;
  DirLock lock(root, "stats.lock");
  if (!lock.held()) return;
  nlohmann::json stats = read_counters(root);
  for (const auto& [field, n] : increments) {
    if (n == 0) continue;
    const std::uint64_t before = stats.contains(field) && stats[field].is_number_unsigned()
                                     ? stats[field].get<std::uint64_t>()
                                     : 0;
    stats[field] = before + n;
  }
  (void)write_counters(root, stats);
}

}  // namespace kbuild
