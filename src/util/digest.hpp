// The hash kbuild's caches identify bytes by: BLAKE2b (libsodium) cut to
// 160 bits, 40 hex digits. A cache hit hashes the whole output (a 137 MiB
// precompiled header for Inductor), and BLAKE2b is about six times Boost's
// SHA-1 here, so this is what a hit's time is mostly made of.
#pragma once

#include <sodium.h>

#include <cstddef>
#include <string>
#include <string_view>

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
