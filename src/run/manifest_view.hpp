// A cache entry's manifest (input_manifest.hpp) read in place: the CBOR
// bytes walked once, every path and digest a view into them. A hit reads a
// manifest of a few hundred files and a thousand or more absent paths; as
// a JSON document that cost half of a local hit (docs/farm.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kbuild {

struct ManifestInput {
  std::string_view path;
  std::int64_t size = 0, mtime_ns = 0;
  std::string_view digest;
};

struct ManifestLibrary {
  std::string_view path;
  std::int64_t size = 0, mtime_ns = 0;
};

// Views into the bytes it was read from, which must outlive it.
struct ManifestView {
  std::vector<ManifestInput> inputs;
  std::vector<std::string_view> absent;
  std::vector<ManifestLibrary> libraries;
  std::optional<std::uint64_t> size;  // the output's (a local entry's)
  std::optional<std::string_view> digest;
  bool compressed = false;  // the local entry's output is one zstd frame
};

// The manifest in `cbor` (as to_cbor writes it: a map with "inputs" and
// optionally "absent", "libraries", "size", "digest", "compression"; other
// keys skipped); nullopt when it is damaged, has another shape, has no
// "inputs", or names a compression other than "zstd".
std::optional<ManifestView> read_manifest(std::string_view cbor);

}  // namespace kbuild
