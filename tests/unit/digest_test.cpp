// The caches' digest is BLAKE2b-160: expected values from Python's hashlib
// (blake2b(digest_size=20)), an implementation independent of libsodium.
#include "util/digest.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

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
