// Small file helpers: whole-file reads, atomic writes, content hashes,
// stamps, unique names.
#pragma once

#include <boost/uuid/detail/sha1.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kbuild/result.hpp"

namespace kbuild {

// The file's bytes, or nullopt when it cannot be read.
std::optional<std::string> read_whole_file(const std::string& path);

// At most `limit` bytes of the file, or nullopt when it cannot be read.
std::optional<std::string> read_file_up_to(const std::string& path, std::size_t limit);

// At most `limit` bytes of the regular file at `path`. Anything else (a
// FIFO, a device node, a directory) fails with "PATH: not a regular file"
// before it is opened for reading, so naming a FIFO never blocks; a file
// that cannot be read fails with "PATH: " and the reason.
Result<std::string> read_regular_file_up_to(const std::string& path, std::size_t limit);

// Why a file kbuild is asked to write at `path` must not be replaced by
// renaming a new file over it ("PATH is not a regular file; ..."): a FIFO,
// a device node (-o /dev/null as root), a socket, a directory. Fine when
// `path` is absent or a regular file (a symlink counts as what it names).
Status check_replaceable(const std::string& path);

// Writes `text` to a new temporary file beside `path` (created with
// O_EXCL|O_NOFOLLOW, written through its descriptor) and renames it into
// place, creating parent directories.
Status write_file_atomically(const std::string& path, const std::string& text);

// SHA-1, fed piece by piece; hex() gives 40 hex digits.
class Sha1 {
 public:
  void add(const void* bytes, std::size_t size) { sha_.process_bytes(bytes, size); }
  void add(const std::string& bytes) { add(bytes.data(), bytes.size()); }
  std::string hex();

 private:
  boost::uuids::detail::sha1 sha_;
};

// SHA-1 of `bytes` as 40 hex digits (identifies file versions in reports).
std::string sha1_hex(const std::string& bytes);

// FNV-1a of `text`: a short, stable name for a cache file, not a content
// hash (what the file holds is checked on reading).
std::uint64_t fnv1a(const std::string& text);

// "PID.RANDOM": a part of a file name no other process picks.
std::string unique_suffix();

// The modification time in nanoseconds, or -1 when `path` does not exist.
std::int64_t mtime_ns(const std::string& path);

// Whether `path` is a directory (following links); false when it cannot be read.
bool is_directory(const std::string& path);

// The lexically normal form of `path`, without a trailing slash.
std::string normal_path(const std::string& path);

}  // namespace kbuild
