#pragma once
// zstd for what the remote cache moves: a precompiled header is 100-150 MB
// and compresses about 6x, so a fleet's Redis holds six times the entries
// and a reader moves a sixth of the bytes.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/result.hpp"

namespace kbuild {

// One zstd frame holding `bytes` (its size recorded in the frame).
std::string zstd_compress(std::string_view bytes, int level = 1);

// The size `frame`'s header records; nullopt when it records none.
std::optional<std::size_t> zstd_content_size(std::string_view frame);

// The bytes of `frame`, in one allocation of exactly their size; a failure
// when it is not one whole zstd frame, does not record its size, or holds
// more than `max_size` bytes (decided from the frame header, before any
// allocation).
Result<std::string> zstd_decompress(std::string_view frame, std::size_t max_size);

}  // namespace kbuild
