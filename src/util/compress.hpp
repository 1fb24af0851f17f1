// zstd for what the remote cache moves: a precompiled header is 100-150 MB
// and compresses about 6x, so a fleet's Redis holds six times the entries
// and a reader moves a sixth of the bytes.
#pragma once
#include <cstddef>
#include <functional>
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

// The same, handed to `sink` a piece (at most 1 MiB) at a time, so that
// the whole is never in memory; the frame's recorded size must be at most
// `max_size` and must be what comes out. A failure from `sink` ends it and
// is returned as it is; `damaged` says whether the frame was at fault.
Status zstd_decompress_to(std::string_view frame, std::size_t max_size,
                          const std::function<Status(std::string_view)>& sink, bool& damaged);

}  // namespace kbuild
