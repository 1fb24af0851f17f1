#include "kbuild/signing.hpp"

#include <sodium.h>

#include "util/digest.hpp"

namespace kbuild {

namespace {

// The secret key as libsodium holds it (seed followed by the public key).
std::string expand(const std::string& seed) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, reinterpret_cast<const unsigned char*>(seed.data()));
  std::string out(reinterpret_cast<const char*>(sk), sizeof sk);
  sodium_memzero(sk, sizeof sk);
  return out;
}

Result<std::string> from_hex(const std::string& hex, std::size_t bytes, const std::string& what) {
  std::string out(bytes, '\0');
  std::size_t got = 0;
  const char* end = nullptr;
  if (hex.size() != 2 * bytes ||
      sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), bytes, hex.data(), hex.size(),
                     nullptr, &got, &end) != 0 ||
      got != bytes)
    return Failure{what + " is not " + std::to_string(2 * bytes) +
                   " hex digits (make a key pair with kbuild cache keygen)"};
  return out;
}

}  // namespace

std::string to_hex(const std::string& bytes) {
  std::string out(2 * bytes.size() + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                 bytes.size());
  out.pop_back();
  return out;
}

SigningKeys generate_signing_keys() {
  init_sodium();
  std::string seed(crypto_sign_SEEDBYTES, '\0');
  randombytes_buf(seed.data(), seed.size());
  SigningKeys keys{to_hex(seed), to_hex(public_key_of(seed))};
  sodium_memzero(seed.data(), seed.size());
  return keys;
}

Result<std::string> decode_signing_key(const std::string& hex, const std::string& what) {
  return from_hex(hex, crypto_sign_SEEDBYTES, what);
}

Result<std::string> decode_verify_key(const std::string& hex, const std::string& what) {
  return from_hex(hex, crypto_sign_PUBLICKEYBYTES, what);
}

std::string public_key_of(const std::string& secret_key) {
  init_sodium();
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, reinterpret_cast<const unsigned char*>(secret_key.data()));
  sodium_memzero(sk, sizeof sk);
  return std::string(reinterpret_cast<const char*>(pk), sizeof pk);
}

std::string sign_message(const std::string& secret_key, const std::string& message) {
  init_sodium();
  std::string sk = expand(secret_key);
  unsigned char sig[crypto_sign_BYTES];
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(message.data()),
                       message.size(), reinterpret_cast<const unsigned char*>(sk.data()));
  sodium_memzero(sk.data(), sk.size());
  return std::string(reinterpret_cast<const char*>(sig), sizeof sig);
}

bool signature_valid(const std::string& public_key, const std::string& message,
                     const std::string& signature) {
  init_sodium();
  return signature.size() == crypto_sign_BYTES && public_key.size() == crypto_sign_PUBLICKEYBYTES &&
         crypto_sign_verify_detached(
             reinterpret_cast<const unsigned char*>(signature.data()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(),
             reinterpret_cast<const unsigned char*>(public_key.data())) == 0;
}

std::string content_hash(const std::string& bytes) {
  init_sodium();
  unsigned char out[32];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(bytes.data()),
                     bytes.size(), nullptr, 0);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

static_assert(sizeof(crypto_generichash_state) <= 384);

ContentHash::ContentHash() {
  init_sodium();
  crypto_generichash_init(reinterpret_cast<crypto_generichash_state*>(state_), nullptr, 0, 32);
}

void ContentHash::add(std::string_view bytes) {
  crypto_generichash_update(reinterpret_cast<crypto_generichash_state*>(state_),
                            reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string ContentHash::raw() {
  unsigned char out[32];
  crypto_generichash_final(reinterpret_cast<crypto_generichash_state*>(state_), out, sizeof out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

std::string content_hash(std::initializer_list<std::string_view> parts) {
  ContentHash h;
  for (std::string_view part : parts) h.add(part);
  return h.raw();
}

}  // namespace kbuild
