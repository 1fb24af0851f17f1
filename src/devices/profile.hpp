// profile: the parts only the library uses (the API: kbuild/profile.hpp).
#pragma once

#include <optional>
#include <string>

#include "kbuild/profile.hpp"

// A parsed Inductor profile remembered between runs: the JSON of a profile
// and its extends chain is parsed and validated once, and later runs read
// the result back (parsed_file_cache.hpp) while every file of the chain and
// kbuild itself keep their identity.
namespace kbuild {

// load_profile(dir, line), through the cache under `cache_root` ("", or a
// root that does not exist yet, caches nothing). A missing, foreign, corrupt
// or stale entry is ignored and the files parsed again; errors are
// load_profile's.
Profile load_profile_cached(const std::string& dir, const std::string& line,
                            const std::string& cache_root);

// The bytes a cache entry holds for `profile`, and back; decoding fails
// (nullopt) on anything malformed.
std::string encode_profile(const Profile& profile);
std::optional<Profile> decode_profile(const std::string& bytes);

}  // namespace kbuild
