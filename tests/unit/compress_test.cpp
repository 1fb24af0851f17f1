// zstd frames as the remote cache stores them, checked against the zstd
// command (another implementation's reader and writer), and every frame a
// reader must refuse: truncated, altered, two frames, one larger than the
// limit (refused from its header), one that does not record its size.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "util/digest.hpp"

using namespace kbuild_test;

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
