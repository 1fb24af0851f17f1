// A parsed device file remembered between runs (parsed_file_cache.hpp): a
// valid file is parsed and validated once, and later runs read the result
// back while the opened file and kbuild itself keep their identity. A file
// that fails validation is never remembered, so its error comes out the
// same every time.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

#include "devices/device_file.hpp"

namespace kbuild {

class ParsedFileCache;

// The bytes a cache entry holds for `file`, and back; decoding fails
// (nullopt) on anything malformed, a ${...} that does not parse included.
std::string encode_device_file(const DeviceFile& file);
std::optional<DeviceFile> decode_device_file(const std::string& bytes);

// The file `path` (real path `real`, open, its status `st`) as remembered,
// if it is.
std::optional<DeviceFile> cached_device_file(const ParsedFileCache& cache, const std::string& path,
                                             const std::string& real, const struct stat& st);
// Remembers `file`, parsed from `real` and stated after it was read as `st`.
void remember_device_file(const ParsedFileCache& cache, const DeviceFile& file,
                          const std::string& real, const struct stat& st);

}  // namespace kbuild
