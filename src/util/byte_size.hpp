// Sizes as people write and read them: "500M", "4G" <-> bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kbuild {

// "500M", "4G", "1048576" -> bytes (K, M, G, T are powers of 1024), at
// most 1024T; nullopt when malformed or out of range (nan, inf, negative).
std::optional<std::uint64_t> parse_size(const std::string& text);

// 1536 -> "1.5 KiB", 4294967296 -> "4.0 GiB", 512 -> "512 B".
std::string human_size(std::uint64_t bytes);

}  // namespace kbuild
