#include "run/remote_entry.hpp"

#include <cstdint>
#include <cstring>

#include "util/digest.hpp"

namespace kbuild {

namespace {

constexpr const char* kEntryMagic = "kbuild-remote-entry-4\n";

std::string u64_bytes(std::uint64_t n) {
  return std::string(reinterpret_cast<const char*>(&n), sizeof n);
}

std::string digest_of(std::string_view key, std::string_view manifest, std::string_view frame) {
  const std::string key_size = u64_bytes(key.size()), manifest_size = u64_bytes(manifest.size()),
                    frame_size = u64_bytes(frame.size());
  return content_hash({kEntryMagic, key_size, key, manifest_size, manifest, frame_size, frame});
}

}  // namespace

std::string encode_remote_entry(std::string_view key, std::string_view manifest,
                                std::string_view frame) {
  std::string bytes = kEntryMagic;
  bytes += u64_bytes(manifest.size());
  bytes += manifest;
  bytes += u64_bytes(frame.size());
  bytes += frame;
  bytes += digest_of(key, manifest, frame);
  return bytes;
}

Result<RemoteEntry> parse_remote_entry(std::string_view bytes) {
  const std::size_t magic = std::strlen(kEntryMagic);
  std::size_t at = magic;
  auto take_u64 = [&bytes, &at](std::uint64_t& n) {
    if (bytes.size() - at < sizeof n) return false;
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    return true;
  };
  auto take = [&bytes, &at](std::uint64_t n, std::string_view& out) {
    if (bytes.size() - at < n) return false;
    out = bytes.substr(at, n);
    at += n;
    return true;
  };
  RemoteEntry e;
  std::uint64_t n = 0;
  if (bytes.size() < magic || bytes.compare(0, magic, kEntryMagic) != 0)
    return Failure{"not a kbuild remote entry (no kbuild-remote-entry-4 header)"};
  if (!take_u64(n) || !take(n, e.manifest)) return Failure{"truncated in its manifest"};
  if (!take_u64(n) || !take(n, e.compressed)) return Failure{"truncated in its output"};
  if (!take(kRemoteDigestBytes, e.digest)) return Failure{"truncated in its digest"};
  if (bytes.size() - at == kRemoteSignatureBytes)
    e.signature = bytes.substr(at);
  else if (at != bytes.size())
    return Failure{std::to_string(bytes.size() - at) +
                   " bytes after its digest, which are not a signature"};
  return e;
}

bool remote_digest_holds(std::string_view key, const RemoteEntry& entry) {
  return entry.digest == digest_of(key, entry.manifest, entry.compressed);
}

}  // namespace kbuild
