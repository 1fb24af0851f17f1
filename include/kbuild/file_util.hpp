// Small file helpers: whole-file reads, atomic writes, content hashes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kbuild {

// The file's bytes, or nullopt when it cannot be read.
std::optional<std::string> read_whole_file(const std::string& path);

// At most `limit` bytes of the file, or nullopt when it cannot be read.
std::optional<std::string> read_file_up_to(const std::string& path, std::size_t limit);

// Why a file kbuild is asked to write at `path` must not be replaced by
// renaming a new file over it ("PATH is not a regular file; ..."): a FIFO,
// a device node (-o /dev/null as root), a socket, a directory. Empty when
// `path` is absent or a regular file (a symlink counts as what it names).
std::string check_replaceable(const std::string& path);

// Writes `text` to a temporary file beside `path` and renames it into place,
// creating parent directories. Returns an error message, empty on success.
std::string write_file_atomically(const std::string& path, const std::string& text);

// SHA-1 of `bytes` as 40 hex digits (identifies file versions in reports).
std::string sha1_hex(const std::string& bytes);

}  // namespace kbuild
