// A --pch header's .gch through the remote cache (docs/cache.md): the .gch
// and its record of what it was built from, stored under the shareable key
// of the header build, installed into this machine's pch/ directory under
// the local key so that planning again finds it reusable (pch.hpp). The
// kernels built with it then share too: their shareable key names the .gch
// by its remote key and the files it read by content, not by this machine's
// cache path, stamps and inode.
#pragma once

#include <optional>
#include <string>

#include "kbuild/environment.hpp"
#include "kbuild/pch.hpp"
#include "kbuild/remote_cache.hpp"
#include "kbuild/trusted_dir.hpp"

namespace kbuild {

// The shareable key of the plan's header build (recorded in the cache's
// pch/<key>.remote, for when the .gch is reused later); nullopt when it has
// none (no cache directory, a file that cannot be read).
std::optional<std::string> remote_pch_key(const PchPlan& plan, const Environment& env,
                                          const TrustedDir& cache);

// For a plan that would build: installs the remote .gch when there is a valid
// one whose inputs are unchanged here. True when installed (plan again).
bool fetch_remote_pch(RemoteCache& remote, const PchPlan& plan, const std::string& remote_key,
                      const TrustedDir& cache);

// After the .gch was built: uploads it with its record.
void store_remote_pch(RemoteCache& remote, const PchPlan& plan, const std::string& remote_key,
                      const TrustedDir& cache);

// What kernels built with it put in their shareable key in place of the
// local identity, and the rewrite of this machine's header path; nothing
// when the record cannot be read.
std::optional<ShareableParts> remote_pch_parts(const PchPlan& plan, const std::string& remote_key,
                                               const std::string& include, const TrustedDir& cache);

}  // namespace kbuild
