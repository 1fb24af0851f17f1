#include "devices/plugin_release.hpp"

#include <algorithm>

#include "devices/plugin_file.hpp"
#include "kbuild/error.hpp"

namespace kbuild {

namespace {

ReleaseChoice chose(const PluginRelease* release, std::string note) {
  ReleaseChoice choice;
  choice.release = release;
  choice.note = std::move(note);
  return choice;
}

std::vector<long> numbers(const std::string& version) {
  return parse_release_version(version).value_or(std::vector<long>{});
}

// A version that names a release: a numbered release's own, or one that a
// named release (master) lists.
struct KnownVersion {
  std::vector<long> numbers;
  std::string text;
  const PluginRelease* release = nullptr;
};

std::vector<KnownVersion> known_versions(const PluginSpec& plugin) {
  std::vector<KnownVersion> out;
  for (const PluginRelease& r : plugin.releases) {
    if (!r.named) out.push_back({numbers(r.version), r.version, &r});
    for (const std::string& v : r.versions) out.push_back({numbers(v), v, &r});
  }
  return out;
}

// A local label ("+cpu", "+git9e73e70") names a build of the same release.
const PluginRelease* exact_release(const PluginSpec& plugin, const std::string& version) {
  const std::string public_version = version.substr(0, version.find('+'));
  for (const KnownVersion& k : known_versions(plugin))
    if (k.text == version || k.text == public_version) return k.release;
  return nullptr;
}

std::string name_of(const KnownVersion& k) {
  return k.release->named ? k.release->version + " (its version " + k.text + ")" : k.text;
}

// The first three numbers: "2.11.0.post1" and "2.11.0rc1" are of line 2.11.0.
std::vector<long> line_of(std::vector<long> numbers) {
  if (numbers.size() > 3) numbers.resize(3);
  return numbers;
}

ReleaseChoice fallback(const PluginSpec& plugin, const std::string& why,
                       const std::string& torch_version, const std::string& profile_line);

// `who` ("torch_npu 2.12.0.post5") is not known: the nearest lower known
// version of its line, else the line's oldest, else the nearest lower of any
// line, else the oldest known.
ReleaseChoice nearest_release(const PluginSpec& plugin, const std::string& who,
                              const std::string& version) {
  const std::vector<long> mine = numbers(version);
  const std::vector<KnownVersion> known = known_versions(plugin);
  const KnownVersion *lower = nullptr, *oldest = nullptr, *line_lower = nullptr,
                     *line_oldest = nullptr;
  for (const KnownVersion& k : known) {
    if (k.numbers < mine && (!lower || k.numbers > lower->numbers)) lower = &k;
    if (!oldest || k.numbers < oldest->numbers) oldest = &k;
    if (line_of(k.numbers) != line_of(mine)) continue;
    if (k.numbers < mine && (!line_lower || k.numbers > line_lower->numbers)) line_lower = &k;
    if (!line_oldest || k.numbers < line_oldest->numbers) line_oldest = &k;
  }
  const std::string head = who + " is not a release kbuild knows: reproducing ";
  if (line_lower)
    return chose(line_lower->release,
                 head + name_of(*line_lower) + ", the nearest lower known release of its line");
  if (line_oldest)
    return chose(line_oldest->release,
                 head + name_of(*line_oldest) + ", the oldest known release of its line");
  if (lower)
    return chose(lower->release, head + name_of(*lower) + ", the nearest lower known release");
  if (!oldest)  // only named releases that list no version
    return fallback(plugin, who + " is not a release kbuild knows", "", "");
  return chose(oldest->release, head + name_of(*oldest) + ", the oldest known release");
}

bool made_for(const PluginRelease& r, const std::string& torch_line) {
  return std::find(r.torch_lines.begin(), r.torch_lines.end(), torch_line) != r.torch_lines.end();
}

// Newer first: a numbered release before a named line, then the highest version.
bool newer(const PluginRelease& a, const PluginRelease& b) {
  auto highest = [](const PluginRelease& r) {
    std::vector<long> best = r.named ? std::vector<long>{} : numbers(r.version);
    for (const std::string& v : r.versions) best = std::max(best, numbers(v));
    return best;
  };
  if (a.named != b.named) return !a.named;
  return highest(a) > highest(b);
}

// The newest known release made for `torch_line` ("" = any); nullptr when none.
const PluginRelease* newest_for(const PluginSpec& plugin, const std::string& torch_line) {
  const PluginRelease* best = nullptr;
  for (const PluginRelease& r : plugin.releases)
    if ((torch_line.empty() || made_for(r, torch_line)) && (!best || newer(r, *best))) best = &r;
  return best;
}

// No version to go by: the newest release made for torch's line, else for
// the line of the Inductor profile in use, else the newest known.
ReleaseChoice fallback(const PluginSpec& plugin, const std::string& why,
                       const std::string& torch_version, const std::string& profile_line) {
  const std::string torch_line = torch_line_of(torch_version);
  const std::string line = torch_line.empty() ? profile_line : torch_line;
  const std::string for_line = torch_line.empty()
                                   ? "Inductor profile " + line + " (torch's version is unknown)"
                                   : "torch " + line;
  const PluginRelease* r = line.empty() ? nullptr : newest_for(plugin, line);
  std::string note;
  if (r) {
    note = why + ": reproducing " + r->version + ", the newest known release for " + for_line;
  } else {
    r = newest_for(plugin, "");
    note = why + ": reproducing " + r->version + ", the newest known release" +
           (line.empty() ? " (torch's version is unknown too)"
                         : " (none is known for " + for_line + ")");
  }
  ReleaseChoice choice = chose(r, note);
  choice.guessed = true;
  return choice;
}

std::string release_names(const PluginSpec& plugin) {
  std::string names;
  for (const PluginRelease& r : plugin.releases) names += (names.empty() ? "" : ", ") + r.version;
  return names;
}

// The release the user named: a release's key, a version one lists, or a
// version kbuild does not know (the nearest lower, with a note).
ReleaseChoice named_release(const PluginSpec& plugin, const ReleaseQuery& q) {
  const std::string who = q.named_by + "=" + q.named;
  ReleaseChoice choice;
  for (const PluginRelease& r : plugin.releases)
    if (r.version == q.named) choice.release = &r;
  if (!choice.release) choice.release = exact_release(plugin, q.named);
  if (!choice.release && parse_release_version(q.named))
    choice = nearest_release(plugin, who, q.named);
  if (!choice.release)
    throw Error(ErrorKind::usage, who + ": " + q.package + " has no release '" + q.named +
                                      "' (releases: " + release_names(plugin) +
                                      "); name one of them, or a version like 2.12.0");
  choice.chosen_by = q.named_by;
  return choice;
}

}  // namespace

std::string torch_line_of(const std::string& version) {
  const std::vector<long> n = numbers(version);
  return n.size() < 2 ? "" : std::to_string(n[0]) + "." + std::to_string(n[1]);
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : ", ") + l;
  return out;
}

ReleaseChoice choose_release(const PluginSpec& plugin, const ReleaseQuery& q) {
  if (plugin.releases.empty()) return {};
  if (!q.named.empty()) return named_release(plugin, q);
  if (q.installed.empty())
    return fallback(plugin,
                    q.package + " release unknown (no " + q.package + " or no version file)",
                    q.torch_version, q.profile_line);
  if (const PluginRelease* r = exact_release(plugin, q.installed)) return chose(r, "");
  if (parse_release_version(q.installed))
    return nearest_release(plugin, q.package + " " + q.installed, q.installed);
  return fallback(plugin, q.package + " " + q.installed + " is not a version kbuild can read",
                  q.torch_version, q.profile_line);
}

std::string torch_line_note(const PluginRelease& release, const std::string& package,
                            const std::string& profile_line, const std::string& torch_version) {
  if (profile_line.empty() || release.torch_lines.empty() || made_for(release, profile_line))
    return "";
  const std::string who = package + " release " + release.version + " is made for torch " +
                          joined_lines(release.torch_lines);
  const std::string torch_line = torch_line_of(torch_version);
  if (torch_line.empty()) return "";  // no torch (or no version): nothing stands in for it
  if (made_for(release, torch_line))
    return who + ", and kbuild has no Inductor profile for torch " + torch_line + ": profile " +
           profile_line + " stands in (torch " + torch_version + ")";
  return who + ", but torch here is " + torch_version + ": its Inductor profile " + profile_line +
         " stands in (different lines: kbuild doctor warns)";
}

}  // namespace kbuild
