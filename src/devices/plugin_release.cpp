#include "devices/plugin_release.hpp"

#include "devices/plugin_file.hpp"

namespace kbuild {

namespace {

std::vector<long> numbers(const std::string& version) {
  return parse_release_version(version).value_or(std::vector<long>{});
}

// The newest known release of `line` ("" = any line); nullptr when none.
const PluginRelease* newest_of(const PluginSpec& plugin, const std::string& line) {
  const PluginRelease* best = nullptr;
  for (const PluginRelease& r : plugin.releases)
    if ((line.empty() || release_line(r.version) == line) &&
        (!best || numbers(r.version) > numbers(best->version)))
      best = &r;
  return best;
}

ReleaseChoice fallback(const PluginSpec& plugin, const std::string& why,
                       const std::string& torch_version) {
  std::string torch_line = release_line(torch_version);
  const PluginRelease* r = torch_line.empty() ? nullptr : newest_of(plugin, torch_line);
  if (r)
    return {r, why + ": reproducing " + r->version + ", the newest known release for torch " +
                   torch_line};
  r = newest_of(plugin, "");
  return {r, why + ": reproducing " + r->version + ", the newest known release" +
                 (torch_line.empty() ? " (torch's version is unknown too)"
                                     : " (none is known for torch " + torch_line + ")")};
}

}  // namespace

ReleaseChoice choose_release(const PluginSpec& plugin, const std::string& package,
                             const std::string& installed, const std::string& torch_version) {
  if (plugin.releases.empty()) return {};
  if (installed.empty())
    return fallback(plugin, package + " release unknown (no " + package + " or no version file)",
                    torch_version);
  // A local label ("+cpu") names a build of the same release.
  const std::string public_version = installed.substr(0, installed.find('+'));
  for (const PluginRelease& r : plugin.releases)
    if (r.version == installed || r.version == public_version) return {&r, ""};
  const std::string line = release_line(installed);
  const std::vector<long> mine = numbers(installed);
  const PluginRelease *lower = nullptr, *oldest = nullptr;
  for (const PluginRelease& r : plugin.releases) {
    if (release_line(r.version) != line) continue;
    std::vector<long> v = numbers(r.version);
    if (v < mine && (!lower || v > numbers(lower->version))) lower = &r;
    if (!oldest || v < numbers(oldest->version)) oldest = &r;
  }
  if (lower)
    return {lower, package + " " + installed + " is not a release kbuild knows: reproducing " +
                       lower->version + ", the nearest lower known release of its line"};
  if (oldest)
    return {oldest, package + " " + installed + " is not a release kbuild knows: reproducing " +
                        oldest->version + ", the oldest known release of its line"};
  return fallback(plugin, package + " " + installed + " is of a line kbuild does not know",
                  torch_version);
}

}  // namespace kbuild
