// manifest: a cache entry's manifest as one typed struct, and its one codec
// (CBOR, docs/cache.md): a single list of fields, each a name and a member,
// that both the encoder and the decoder walk, so no field is written that
// is not read. Every other module reads and edits manifests through it,
// never through CBOR or positions.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/error.hpp"

namespace kbuild {

// A file a program of the build read: [path, size, mtime_ns, digest,
// ctime_ns]. The ctime is what shows other bytes given an old mtime back
// (touch -d, cp -p, tar) or another file behind the same path (a linked
// include dir swapped); kNoCtime in a row an older kbuild wrote.
inline constexpr std::int64_t kNoCtime = -1;
struct ManifestInput {
  std::string_view path;
  std::int64_t size = 0, mtime_ns = 0;
  std::string_view digest;
  std::int64_t ctime_ns = kNoCtime;
};

// A library a link could pick up (older entries): [path, size, mtime_ns].
struct ManifestLibrary {
  std::string_view path;
  std::int64_t size = 0, mtime_ns = 0;
};

// A directory holding absent paths, stamped when none of them was there:
// while its stamps hold, nothing was added to it (one stat, not one a path).
// A directory that did not exist has kNoDirectory as both stamps: every
// path under it is absent while it stays so. [path, mtime_ns, ctime_ns].
inline constexpr std::int64_t kNoDirectory = -1;
struct ManifestDir {
  std::string_view path;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
};

// A variable a program of the build asked for, and the value it got
// (nullopt: unset, CBOR's null). [name, value].
struct ManifestVariable {
  std::string_view name;
  std::optional<std::string_view> value;
};

// A directory a program listed, and the digest of its sorted names.
// [path, digest].
struct ManifestListing {
  std::string_view path;
  std::string_view digest;
};

// A field this kbuild does not know (a later one's): its name and its CBOR
// item as read, written back as they are.
struct ManifestOtherField {
  std::string_view name, item;
};

// A manifest. Its strings are views: into the bytes it was read from
// (read_manifest), which must outlive it, or into text it keeps itself
// (keep), which it and its copies share.
struct Manifest {
  // What the build was observed to read, look for and ask (written by every
  // manifest, empty or not).
  std::vector<std::string_view> absent;
  std::vector<ManifestDir> dirs;
  std::vector<ManifestInput> inputs;
  std::vector<ManifestListing> listed;
  std::vector<ManifestVariable> variables;
  std::vector<ManifestLibrary> libraries;  // written when not empty
  // What a hit gives back besides the output, each one zstd frame: the
  // dependency file (-MD, -MMD), when the build wrote one, and what the
  // compiler printed (output_cache.hpp: encode_compiler_output), which
  // every entry this kbuild stores has ("" when nothing was printed).
  std::optional<std::string_view> depfile;
  std::optional<std::string_view> diagnostics;
  // The local entry's output: compressed (one zstd frame, "compression":
  // "zstd"), its size and digest as the compiler wrote it.
  bool compressed = false;
  std::optional<std::string_view> digest;
  std::optional<std::uint64_t> size;
  // A --pch header's manifest (pch.cpp's .deps): the .gch's stamp, and the
  // shared key of the header build.
  std::optional<std::string_view> gch;
  std::optional<std::string_view> remote;
  std::vector<ManifestOtherField> others;  // in the order read, after the fields above

  // `text` kept by the manifest: a view of it that lives as long as the
  // manifest or a copy of it.
  std::string_view keep(std::string text);

 private:
  friend struct ManifestCodec;
  std::shared_ptr<std::deque<std::string>> kept_;
  bool lists_skipped_ = false;  // read without its lists: not to be written
};

// The manifest in `cbor`: a map of the fields above by name, in any order
// ("inputs" required; a field this kbuild does not know is kept in
// `others`); a failure that says why when it is damaged, has another
// shape, names a field twice or a compression other than "zstd". A
// row's extra parts are skipped ([path, size, mtime, digest, ...] in
// "inputs" and "libraries" only). Without `lists` the lists (absent, dirs,
// inputs, listed, variables, libraries) are checked and skipped over, left
// empty: for what a hit gives back besides the output, once the whole
// manifest was read to check its inputs. Such a manifest cannot be written
// (manifest_bytes throws std::logic_error).
Result<Manifest> read_manifest(std::string_view cbor, bool lists = true);

// The manifest as CBOR: a map of its fields in the field list's order
// (absent, dirs, inputs, listed, variables, libraries, depfile,
// diagnostics, compression, digest, size, gch, remote), then `others`.
// What read_manifest reads back; the bytes an entry holds on disk.
std::string manifest_bytes(const Manifest& manifest);

}  // namespace kbuild
