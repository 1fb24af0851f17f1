// digest: BLAKE2b digests, signed cache entries (libsodium), zstd frames, and kbuild's own
// identity.
#pragma once

#include <sodium.h>
#include <sys/stat.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/answers.hpp"
#include "kbuild/error.hpp"
#include "util/trusted_dir.hpp"

// Ed25519 signatures (libsodium) for remote cache entries: writers hold the
// secret key, readers only the public key, so a host that can verify an
// entry cannot forge one. Keys travel as hex: the secret key is the 32-byte
// seed, the public key 32 bytes.
namespace kbuild {

// A fresh key pair.
SigningKeys generate_signing_keys();

// Checks and decodes a key given in hex; `what` names it in the failure.
Result<std::string> decode_signing_key(const std::string& hex, const std::string& what);
Result<std::string> decode_verify_key(const std::string& hex, const std::string& what);

// The 64-byte signature of `message` with the decoded secret key.
std::string sign_message(const std::string& secret_key, const std::string& message);
bool signature_valid(const std::string& public_key, const std::string& message,
                     const std::string& signature);

// The public key (decoded) that belongs to a decoded secret key.
std::string public_key_of(const std::string& secret_key);

// BLAKE2b-256 of `bytes`, raw (32 bytes): libsodium's fastest hash, about
// three times its SHA-256 here (bench/remote-cache).
std::string content_hash(const std::string& bytes);
// The same hash of `parts` one after another, without joining them first
// (a remote entry is hashed whole: no copy of its megabytes).
std::string content_hash(std::initializer_list<std::string_view> parts);
// The same hash, fed piece by piece (a remote hit hashes the output as it
// is decompressed, never holding it whole).
class ContentHash {
 public:
  ContentHash();
  void add(std::string_view bytes);
  std::string raw();  // 32 bytes; ends it
 private:
  alignas(64) unsigned char state_[384];  // crypto_generichash_state
};
std::string to_hex(const std::string& bytes);

}  // namespace kbuild

// The hash kbuild's caches identify bytes by: BLAKE2b (libsodium) cut to
// 160 bits, 40 hex digits. A cache hit hashes the whole output (a 137 MiB
// precompiled header for Inductor), and BLAKE2b is about six times Boost's
// SHA-1 here, so this is what a hit's time is mostly made of.
namespace kbuild {

// Sets libsodium up once (thread-safe): it picks its code for this CPU
// there, and until then BLAKE2b runs the portable reference code, at a
// third of the speed.
void init_sodium();

// Fed piece by piece; hex() ends it and gives 40 hex digits.
class Digest {
 public:
  Digest();
  void add(const void* bytes, std::size_t size);
  void add(std::string_view bytes) { add(bytes.data(), bytes.size()); }
  std::string hex();

 private:
  crypto_generichash_state state_{};
};

// The digest of `bytes` as 40 hex digits.
std::string digest_hex(std::string_view bytes);

}  // namespace kbuild

// zstd for what the remote cache moves: a precompiled header is 100-150 MB
// and compresses about 6x, so a fleet's Redis holds six times the entries
// and a reader moves a sixth of the bytes.
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

// A program named by its content (the remote cache's key names the compiler
// and the launcher so), without hashing a megabyte of compiler on every
// build: the hash is remembered in the cache directory (programs/) under the
// file's identity (real path, device, inode, size, mtime and ctime), which
// any change to the file's bytes changes (ctime cannot be set back).
namespace kbuild {

class FileSystem;

// BLAKE2b-256 (hex) of the file `path` resolves to (links followed) in
// `files`; a failure says why it cannot be read. With `cache`, a hash
// remembered there for the same identity is used, and a new one
// remembered, unless the file has not settled (`files`' clock) or changed
// while it was read (a change within the file system clock's tick would
// not be seen).
Result<std::string> program_hash(const FileSystem& files, const std::string& path,
                                 const TrustedDir* cache);

// digest_hex of the file's bytes, remembered the same way (digests/) for a
// file of `remember_from` bytes or more: an observed manifest names the
// compiler's programs and libraries, 50 MB a build, by content.
Result<std::string> file_digest(const FileSystem& files, const std::string& path,
                                const TrustedDir* cache,
                                std::size_t remember_from = std::size_t{256} * 1024);

// What reading a file for its digest saw: the digest, the file's identity
// as it was read (stat), and whether its bytes were read (not remembered).
struct FileLook {
  std::string digest;
  struct stat seen {};
  bool read = false;
};
struct FileLookRequest {
  std::function<void(std::string_view)> visit;  // each piece read, in order
  const std::atomic<bool>* stop = nullptr;      // set: give up (a failure returned)
};
// Whether two stats are of the same version of a file: device, inode,
// size, mtime and ctime (which any change to its bytes changes).
bool same_identity(const struct stat& a, const struct stat& b);
// file_digest, read a MiB at a time, with what it saw.
Result<FileLook> look_at_file(const FileSystem& files, const std::string& path,
                              const TrustedDir* cache, std::size_t remember_from,
                              const FileLookRequest& how);

}  // namespace kbuild
