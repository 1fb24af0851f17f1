// Ed25519 signing and BLAKE2b hashing (libsodium), checked against the
// published test vectors, and the hex keys' decoding.
#include "util/digest.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

namespace {

// RFC 8032, section 7.1, TEST 1 (an empty message).
const char* kSeed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const char* kPublic = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const char* kEmptyMessageSignature =
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b4"
    "6bd25bf5f0595bbe24655141438e7a100b";

std::string decoded(const std::string& hex) {
  Result<std::string> key = decode_signing_key(hex, "key");
  REQUIRE(key);
  return *key;
}

}  // namespace

TEST_CASE("signing matches RFC 8032's test vector", "[unit][signing]") {
  const std::string seed = decoded(kSeed);
  CHECK(to_hex(public_key_of(seed)) == kPublic);
  CHECK(to_hex(sign_message(seed, "")) == kEmptyMessageSignature);
}

TEST_CASE("a signature verifies only for its message and its key", "[unit][signing]") {
  SigningKeys keys = generate_signing_keys();
  SigningKeys other = generate_signing_keys();
  CHECK(keys.secret_hex.size() == 64);
  CHECK(keys.public_hex.size() == 64);
  CHECK(keys.secret_hex != other.secret_hex);
  const std::string secret = decoded(keys.secret_hex);
  Result<std::string> pub = decode_verify_key(keys.public_hex, "public key");
  REQUIRE(pub);
  CHECK(to_hex(public_key_of(secret)) == keys.public_hex);

  const std::string message("entry\0bytes", 11);
  const std::string signature = sign_message(secret, message);
  CHECK(signature.size() == 64);
  CHECK(signature_valid(*pub, message, signature));
  CHECK_FALSE(signature_valid(*pub, message + "x", signature));
  CHECK_FALSE(signature_valid(*pub, std::string("entry"), signature));
  std::string flipped = signature;
  flipped[10] ^= 1;
  CHECK_FALSE(signature_valid(*pub, message, flipped));
  CHECK_FALSE(signature_valid(*decode_verify_key(other.public_hex, "k"), message, signature));
  CHECK_FALSE(signature_valid(*pub, message, signature.substr(0, 63)));
  CHECK_FALSE(signature_valid(pub->substr(0, 31), message, signature));
  CHECK_FALSE(signature_valid(*pub, message, ""));
}

TEST_CASE("a key that is not exactly 64 hex digits is refused, naming it", "[unit][signing]") {
  for (const std::string& bad :
       {std::string(""), std::string(63, 'a'), std::string(65, 'a'), std::string(64, 'g'),
        std::string(62, 'a') + " a", std::string(kSeed).substr(0, 62) + ":0"}) {
    Result<std::string> key = decode_signing_key(bad, "KBUILD_REMOTE_CACHE_SIGNING_KEY");
    REQUIRE_FALSE(key);
    CHECK(key.why() ==
          "KBUILD_REMOTE_CACHE_SIGNING_KEY is not 64 hex digits (make a key pair with kbuild "
          "cache keygen)");
    CHECK_FALSE(decode_verify_key(bad, "public key"));
  }
  Result<std::string> upper = decode_verify_key(
      "D75A980182B10AB7D54BFED3C964073A0EE172F3DAA62325AF021A68F707511A", "public key");
  REQUIRE(upper);
  CHECK(to_hex(*upper) == kPublic);
}

TEST_CASE("content_hash is BLAKE2b-256", "[unit][signing]") {
  CHECK(to_hex(content_hash("")) ==
        "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
  CHECK(to_hex(content_hash("abc")) ==
        "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
  CHECK(content_hash(std::string("a\0", 2)) != content_hash("a"));
}

TEST_CASE("to_hex: two lower-case digits a byte", "[unit][signing]") {
  CHECK(to_hex("") == "");
  CHECK(to_hex(std::string("\x00\xff\x10", 3)) == "00ff10");
}

TEST_CASE("Ed25519: what one key signs, only its public key verifies", "[unit][signing]") {
  SigningKeys keys = generate_signing_keys(), other = generate_signing_keys();
  auto secret = decode_signing_key(keys.secret_hex, "s");
  auto pub = decode_verify_key(keys.public_hex, "p");
  auto other_pub = decode_verify_key(other.public_hex, "p");
  REQUIRE((secret && pub && other_pub));
  CHECK(public_key_of(*secret) == *pub);
  std::string message = content_hash("an entry");
  std::string signature = sign_message(*secret, message);
  CHECK(signature_valid(*pub, message, signature));
  CHECK_FALSE(signature_valid(*other_pub, message, signature));
  CHECK_FALSE(signature_valid(*pub, content_hash("another entry"), signature));
  signature[0] ^= 1;
  CHECK_FALSE(signature_valid(*pub, message, signature));
  CHECK_FALSE(signature_valid(*pub, message, ""));
  CHECK_FALSE(decode_signing_key("abc", "KEY"));
  CHECK_FALSE(decode_verify_key(std::string(64, 'g'), "KEY"));
}
