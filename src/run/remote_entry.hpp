// remote_entry: the remote cache's entry as every backend stores it: magic,
// the manifest (the local cache's CBOR), the output as one zstd frame, the
// BLAKE2b-256 digest of the key, the manifest and the frame as stored, then
// an optional Ed25519 signature of that digest. The remote cache writes and
// checks the digest; signed_store adds and checks the signature. The
// digest covers the bytes a reader reads, so it and the signature are
// checked before anything is decompressed: a frame swapped for a small one
// that expands to the reader's limit is refused unread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/error.hpp"

namespace kbuild {

inline constexpr std::size_t kRemoteDigestBytes = 32, kRemoteSignatureBytes = 64;

// The parts of a stored entry, views into its bytes (not copied).
struct RemoteEntry {
  std::string_view manifest, compressed, digest, signature;  // signature "": none
};

// The entry of `key` without a signature: it ends with its digest.
std::string encode_remote_entry(std::string_view key, std::string_view manifest,
                                std::string_view frame);

// The parts of `bytes`; a failure says how they are not an entry (not this
// format, truncated, or bytes after it).
Result<RemoteEntry> parse_remote_entry(std::string_view bytes);

// Whether `entry`'s digest is that of its key, manifest and frame.
bool remote_digest_holds(std::string_view key, const RemoteEntry& entry);

}  // namespace kbuild
