// Where kbuild keeps its caches (outputs, precompiled headers, Python
// discovery), and opening that directory safely. A cache directory is
// marked with CACHEDIR.TAG (as ccache and others do, so backup tools skip
// it); kbuild adopts an unmarked directory only when it is empty or holds
// nothing but kbuild's own layout, and clears only what it recognises.
#pragma once

#include <string>

#include "kbuild/environment.hpp"
#include "kbuild/result.hpp"
#include "kbuild/trusted_dir.hpp"

namespace kbuild {

// KBUILD_CACHE_DIR, else $XDG_CACHE_HOME/kbuild, else $HOME/.cache/kbuild;
// "" when none of them is set (then nothing is cached).
std::string cache_root(const Environment& env);

// What to say when cache_root() is "".
extern const char* const kNoCacheRoot;

// Opens `root` as kbuild's cache, checked like a device file (owner you or
// root, not writable by others). With `create`, a missing directory is
// created and marked. A failure says why it cannot be used and what to do.
Result<TrustedDir> open_cache_root(const std::string& root, bool create);

// Removes every entry kbuild keeps in the cache (the marker stays).
Status clear_cache(const TrustedDir& root);

}  // namespace kbuild
