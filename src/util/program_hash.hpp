// A program named by its content (the remote cache's key names the compiler
// and the launcher so), without hashing a megabyte of compiler on every
// build: the hash is remembered in the cache directory (programs/) under the
// file's identity (real path, device, inode, size, mtime and ctime), which
// any change to the file's bytes changes (ctime cannot be set back).
#pragma once

#include <optional>
#include <string>

#include "kbuild/trusted_dir.hpp"

namespace kbuild {

// BLAKE2b-256 (hex) of the file `path` resolves to (links followed);
// nothing when it cannot be read. With `cache`, a hash remembered there for
// the same identity is used, and a new one remembered, unless the file
// has not settled (file_system()) or changed while it was read (a change within
// the file system clock's tick would not be seen).
std::optional<std::string> program_hash(const std::string& path, const TrustedDir* cache);

}  // namespace kbuild
