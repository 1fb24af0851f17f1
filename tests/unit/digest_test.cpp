// The caches' digest is BLAKE2b-160: expected values from Python's hashlib
// (blake2b(digest_size=20)), an implementation independent of libsodium.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "util/digest.hpp"

using namespace kbuild;
using namespace kbuild_test;

TEST_CASE("digest_hex: BLAKE2b cut to 160 bits, as hashlib computes it", "[unit][digest]") {
  CHECK(digest_hex("") == "3345524abf6bbe1809449224b5972c41790b6cf2");
  CHECK(digest_hex("abc") == "384264f676f39536840523f284921cdc68b6846b");
  CHECK(digest_hex(std::string(1, '\0')) == "082ad992fb76871c33a1b9993a082952feaca5e6");
}

TEST_CASE("Digest fed in pieces equals the digest of the whole", "[unit][digest]") {
  const std::string whole = std::string(100000, 'a') + "b";
  CHECK(digest_hex(whole) == "2c6c07d93a28ad7e1329b81e2d78f06b5ca6d054");
  Digest pieces;
  for (std::size_t at = 0; at < whole.size(); at += 4096)
    pieces.add(std::string_view(whole).substr(at, 4096));
  CHECK(pieces.hex() == digest_hex(whole));
}

// zstd frames as the remote cache stores them, checked against the zstd
// command (another implementation's reader and writer), and every frame a
// reader must refuse: truncated, altered, two frames, one larger than the
// limit (refused from its header), one that does not record its size.
namespace {

// Text that compresses (a precompiled header does ~6x) but is not trivial.
std::string sample(std::size_t size) {
  std::string s;
  std::uint32_t x = 7;
  while (s.size() < size) {
    x = x * 1664525u + 1013904223u;
    s += "token_" + std::to_string(x >> 22) + (x & 1 ? " " : "\n");
  }
  s.resize(size);
  return s;
}

}  // namespace

TEST_CASE("kbuild's frames are read by the zstd command, and its frames by kbuild",
          "[unit][compress]") {
  TempDir dir;
  for (std::size_t size : {std::size_t(0), std::size_t(1000), std::size_t(20u << 20)}) {
    const std::string text = sample(size);
    const std::string frame = kbuild::zstd_compress(text);
    if (size > 1000) CHECK(frame.size() < text.size() / 3);
    write_file(dir / "k.zst", frame);
    REQUIRE(
        run({"/usr/bin/zstd", "-q", "-d", "-f", dir / "k.zst", "-o", dir / "k.out"}).exit_code ==
        0);
    CHECK(read_file(dir / "k.out") == text);

    write_file(dir / "t.txt", text);
    // --long=23: the 8 MiB window that -19 gives a 20 MiB input, at the
    // default level's speed (-19 took 16 s under the sanitizers).
    REQUIRE(
        run({"/usr/bin/zstd", "-q", "-f", "-3", "--long=23", dir / "t.txt", "-o", dir / "t.zst"})
            .exit_code == 0);
    auto back = kbuild::zstd_decompress(read_file(dir / "t.zst"), 64u << 20);
    REQUIRE(back);
    CHECK(*back == text);
  }
}

TEST_CASE("a frame that is not whole, altered, doubled or too large is refused",
          "[unit][compress]") {
  const std::string text = sample(1u << 20);
  const std::string frame = kbuild::zstd_compress(text);
  CHECK_FALSE(kbuild::zstd_decompress(frame.substr(0, frame.size() - 1), 8u << 20));
  CHECK_FALSE(kbuild::zstd_decompress(frame.substr(0, 3), 8u << 20));
  CHECK_FALSE(kbuild::zstd_decompress(frame + frame, 8u << 20));
  CHECK_FALSE(kbuild::zstd_decompress(text, 8u << 20));  // not a frame at all
  std::string altered = frame;
  altered[altered.size() / 2] = static_cast<char>(altered[altered.size() / 2] ^ 0x5a);
  auto damaged = kbuild::zstd_decompress(altered, 8u << 20);
  // zstd checks its own structure; a flipped literal byte may still decode,
  // to other bytes (the remote cache's digest is what catches those).
  CHECK((!damaged || *damaged != text));

  // One byte over the limit: refused before anything is allocated.
  auto over = kbuild::zstd_decompress(frame, text.size() - 1);
  REQUIRE_FALSE(over);
  CHECK(over.why().find("more than the") != std::string::npos);
  CHECK(kbuild::zstd_content_size(frame) == text.size());
  CHECK(kbuild::zstd_decompress(frame, text.size()));
}

TEST_CASE("a streamed frame without its size is refused", "[unit][compress]") {
  TempDir dir;
  // `zstd` reading a pipe cannot write the size into the frame header.
  REQUIRE(run({"/bin/sh", "-c",
               "head -c 100000 /dev/zero | /usr/bin/zstd -q -c > '" + (dir / "s.zst") + "'"})
              .exit_code == 0);
  const std::string frame = read_file(dir / "s.zst");
  CHECK_FALSE(kbuild::zstd_content_size(frame));
  CHECK_FALSE(kbuild::zstd_decompress(frame, 1u << 20));
}

// Ed25519 signing and BLAKE2b hashing (libsodium), checked against the
// published test vectors, and the hex keys' decoding.
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
