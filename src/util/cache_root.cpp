#include "kbuild/cache_root.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>

namespace kbuild {

namespace {

constexpr const char* kMarker = "CACHEDIR.TAG";
// The signature of the Cache Directory Tagging Specification.
constexpr const char* kMarkerText =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kbuild.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

// Everything kbuild creates in a cache directory.
constexpr std::array<const char*, 8> kLayout = {"objects",  "tmp",        "pch",        "discovery",
                                                "programs", "stats.json", "stats.lock", kMarker};

bool is_layout_name(const std::string& name) {
  return std::any_of(kLayout.begin(), kLayout.end(), [&](const char* n) { return name == n; }) ||
         name.rfind(".stats.json.tmp.", 0) == 0;
}

bool hex_name(const std::string& name, std::size_t size) {
  return name.size() >= size &&
         std::all_of(name.begin(), name.begin() + static_cast<long>(size),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// Whether everything in `name` (one of kLayout) has the shape kbuild gives
// it: an unmarked directory is adopted only then (a cache of an older kbuild).
bool layout_holds(const TrustedDir& dir, const std::string& name) {
  auto st = dir.status(name);
  if (!st) return true;
  if (!S_ISDIR(st->st_mode)) return S_ISREG(st->st_mode) && name.find('.') != std::string::npos;
  Result<TrustedDir> sub = dir.sub(name, false);
  if (!sub) return false;
  for (const std::string& entry : sub->list()) {
    bool fits = name == "objects" ? entry.size() == 2 && hex_name(entry, 2)
                : name == "pch"   ? hex_name(entry, 40)
                : name == "discovery"
                    ? entry.rfind("python-", 0) == 0 || entry.rfind("isa-", 0) == 0
                : name == "programs" ? hex_name(entry, 64)
                                     : false;  // tmp/ holds only what a build is making
    if (!fits) return false;
  }
  return true;
}

bool marked(const TrustedDir& dir) {
  Result<std::string> text = dir.read(kMarker, 4096);
  return text && text->rfind("Signature: 8a477f597d28d172789f06886806bc55", 0) == 0;
}

}  // namespace

const char* const kNoCacheRoot =
    "no cache directory: KBUILD_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset or empty; "
    "set KBUILD_CACHE_DIR to use one";

std::string cache_root(const Environment& env) {
  if (auto dir = env.get_nonempty("KBUILD_CACHE_DIR")) return *dir;
  if (auto xdg = env.get_nonempty("XDG_CACHE_HOME")) return *xdg + "/kbuild";
  if (auto home = env.get_nonempty("HOME")) return *home + "/.cache/kbuild";
  return "";
}

Result<TrustedDir> open_cache_root(const std::string& root, bool create) {
  if (root.empty()) return Failure{kNoCacheRoot};
  struct stat st {};
  if (!create && ::stat(root.c_str(), &st) != 0)
    return Failure{"cache directory " + root + " does not exist"};
  Result<TrustedDir> dir = TrustedDir::open(root, create);
  if (!dir)
    return Failure{
        "cache directory " + dir.why() +
        "; fix it (chmod go-w, chown) or set KBUILD_CACHE_DIR to a directory only you can write"};
  if (marked(*dir)) return dir;
  std::vector<std::string> names = dir->list();
  if (!std::all_of(names.begin(), names.end(), [&dir](const std::string& n) {
        return is_layout_name(n) && layout_holds(*dir, n);
      }))
    return Failure{"cache directory " + root +
                   " is not kbuild's (no CACHEDIR.TAG, and it holds other files); set "
                   "KBUILD_CACHE_DIR to an empty or new directory"};
  if (Status written = dir->write_atomically(kMarker, kMarkerText); !written)
    return Failure{"cache directory " + root + ": " + written.why()};
  return dir;
}

Status clear_cache(const TrustedDir& root) {
  if (!marked(root))
    return Failure{root.path() +
                   " is not marked as kbuild's cache (no CACHEDIR.TAG); not clearing it"};
  for (const std::string& name : root.list()) {
    if (name == kMarker || !is_layout_name(name)) continue;
    if (Status removed = root.remove_tree(name); !removed) return removed;
  }
  return ok();
}

}  // namespace kbuild
