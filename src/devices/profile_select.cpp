#include "kbuild/profile_select.hpp"

#include <algorithm>
#include <cctype>

#include "devices/profile_cache.hpp"
#include "kbuild/error.hpp"
#include "site/package_version.hpp"

namespace kbuild {

namespace {

constexpr const char* kDefaultLine = "2.11";

std::pair<int, int> line_key(const std::string& line) {
  auto dot = line.find('.');
  return {std::stoi(line.substr(0, dot)), std::stoi(line.substr(dot + 1))};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : ", ") + l;
  return out;
}

// The line itself when it has a profile, else the nearest older one (below
// the oldest: the oldest).
std::string nearest_line(const std::vector<std::string>& lines, const std::string& wanted) {
  std::string best;
  for (const std::string& l : lines)
    if (line_key(l) <= line_key(wanted)) best = l;
  return best.empty() ? lines.front() : best;
}

}  // namespace

std::optional<std::string> inductor_line_of(const std::string& version) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) ++i;
    return i > start && i - start < 6;
  };
  if (!digits() || i >= version.size() || version[i] != '.') return std::nullopt;
  ++i;
  if (!digits()) return std::nullopt;
  return version.substr(0, i);
}

bool is_torch_version(const std::string& text) {
  std::size_t parts = 1;
  bool digit_seen = false;
  for (char c : text) {
    if (c == '.') {
      if (!digit_seen) return false;
      ++parts;
      digit_seen = false;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit_seen = true;
    } else {
      return false;
    }
  }
  return digit_seen && (parts == 2 || parts == 3) && text.size() < 24;
}

ProfileChoice choose_profile(const std::string& dir, const std::string& torch_version,
                             const std::string& chosen_by, const std::string& cache_root) {
  ProfileChoice choice;
  choice.torch_version = torch_version;
  choice.chosen_by = chosen_by;
  std::string line = kDefaultLine;
  if (auto wanted = inductor_line_of(torch_version)) {
    std::vector<std::string> lines = profile_lines(dir);
    if (lines.empty())
      throw Error(ErrorKind::config, "no Inductor profile in " + dir + "; reinstall kbuild");
    line = nearest_line(lines, *wanted);
    if (line != *wanted)
      choice.note = "torch " + torch_version + " (" + chosen_by + ") has no Inductor profile " +
                    *wanted + "; using the nearest, " + line + " (profiles: " + joined(lines) + ")";
  } else if (!torch_version.empty()) {
    choice.note = "torch version '" + torch_version + "' (" + chosen_by +
                  ") is not MAJOR.MINOR; using Inductor profile " + line;
  }
  choice.profile = std::make_shared<const Profile>(load_profile_cached(dir, line, cache_root));
  return choice;
}

ProfileChoice choose_profile_for(const std::string& dir, const std::string& torch_version_option,
                                 const Paths& paths, const std::string& cache_root) {
  if (!torch_version_option.empty()) {
    if (!is_torch_version(torch_version_option))
      throw Error(ErrorKind::usage, "--torch-version: '" + torch_version_option +
                                        "' is not a torch version like 2.9 or 2.9.1");
    return choose_profile(dir, torch_version_option, "--torch-version", cache_root);
  }
  if (paths.torch_root)
    if (auto v = read_package_version(*paths.torch_root + "/version.py"))
      return choose_profile(dir, *v, *paths.torch_root + "/version.py", cache_root);
  return choose_profile(dir, "", "default", cache_root);
}

std::string describe(const ProfileChoice& choice) {
  std::string text = "Inductor profile " + choice.profile->name + " (" + choice.profile->file;
  if (!choice.torch_version.empty())
    text += "; torch " + choice.torch_version + " from " + choice.chosen_by;
  else
    text += "; no torch version known: the default line";
  return text + ")";
}

}  // namespace kbuild
