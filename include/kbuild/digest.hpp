#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "kbuild/error.hpp"

// Ed25519 signatures (libsodium) for remote cache entries: writers hold the
// secret key, readers only the public key, so a host that can verify an
// entry cannot forge one. Keys travel as hex: the secret key is the 32-byte
// seed, the public key 32 bytes.
namespace kbuild {

struct SigningKeys {
  std::string secret_hex;  // 64 hex digits (the seed)
  std::string public_hex;  // 64 hex digits
};

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
