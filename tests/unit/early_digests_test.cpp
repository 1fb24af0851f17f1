// Files hashed while the compiler still runs (EarlyDigests): what the
// records name is hashed as the records are written, and a digest is given
// back only for the version of the file that was read.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "../support/fake_file_clock.hpp"
#include "../support/test_support.hpp"
#include "run/early_digests.hpp"

using kbuild::EarlyDigests;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace {

struct stat early_digests_stat(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st;
}

// Appends records as the observer writes them: KIND PID ' ' PAYLOAD NUL.
void early_digests_record(const std::string& file, const std::string& records) {
  std::ofstream(file, std::ios::binary | std::ios::app) << records;
}

std::string early_digests_rec(char kind, const std::string& path) {
  return std::string(1, kind) + "41 " + path + '\0';
}

}  // namespace

TEST_CASE("files the records name are hashed, and given back for that version only",
          "[early_digests]") {
  TempDir tmp;
  const std::string records = tmp.path().string() + "/observed.0";
  REQUIRE(::mkdir(records.c_str(), 0700) == 0);
  const std::string header = tmp.path().string() + "/a.h";
  write_file(header, "abc");
  const std::string temp = tmp.path().string() + "/cc.s";
  write_file(temp, "written by the build, then read");

  EarlyDigests early(kbuild::system_file_system(), nullptr, 64 * 1024);
  early.watch(records);
  // Written after the watch began, as the compiler writes them.
  early_digests_record(
      records + "/41",
      early_digests_rec('R', header) + early_digests_rec('W', temp) + early_digests_rec('R', temp));
  early.finish(true);

  const EarlyDigests::Look* look = early.find(header, early_digests_stat(header));
  REQUIRE(look);
  // BLAKE2b-160 of "abc", as `printf abc | b2sum -l 160` prints it.
  CHECK(look->digest == "384264f676f39536840523f284921cdc68b6846b");
  CHECK(look->scanned);
  CHECK_FALSE(look->mentions_clock);
  // A file the build wrote before reading it is its own, never an input.
  CHECK_FALSE(early.find(temp, early_digests_stat(temp)));
  // The version looked at is still there; a path never looked at says nothing.
  CHECK_FALSE(early.saw_other(header, early_digests_stat(header)));
  CHECK_FALSE(early.saw_other(tmp.path().string() + "/never.h", early_digests_stat(header)));

  // Another version of the header (its ctime moves): nothing given back.
  write_file(header, "abd");
  struct stat now = early_digests_stat(header);
  now.st_ctim.tv_nsec += 1;  // whatever the clock's tick, a different identity
  CHECK_FALSE(early.find(header, now));
  // ...and the path changed during the build, whatever its times say.
  CHECK(early.saw_other(header, now));
}

TEST_CASE("the clock's macros are found across the pieces a file is read in, never in a binary",
          "[early_digests]") {
  TempDir tmp;
  // "__DATE__" straddling the first MiB's end.
  std::string text(1 << 20, 'x');
  text.replace(text.size() - 4, 4, "__DA");
  text += "TE__\n";
  const std::string straddling = tmp.path().string() + "/straddling.h";
  write_file(straddling, text);
  const std::string plain = tmp.path().string() + "/plain.h";
  write_file(plain, "int f(); // no date here: __DAT E__\n");
  const std::string binary = tmp.path().string() + "/lib.so";
  write_file(binary, std::string("\x7f"
                                 "ELF\0\0",
                                 6) +
                         "__DATE__");

  EarlyDigests early(kbuild::system_file_system(), nullptr, 64 * 1024);
  early.foresee({straddling, plain, binary});
  early.finish(true);

  const EarlyDigests::Look* a = early.find(straddling, early_digests_stat(straddling));
  const EarlyDigests::Look* b = early.find(plain, early_digests_stat(plain));
  const EarlyDigests::Look* c = early.find(binary, early_digests_stat(binary));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(a->mentions_clock);
  CHECK_FALSE(b->mentions_clock);
  CHECK(c->scanned);
  CHECK_FALSE(c->mentions_clock);
}

TEST_CASE("a file large enough is remembered, and still scanned for the clock's macros",
          "[early_digests]") {
  TempDir tmp;
  auto cache = kbuild::TrustedDir::open(tmp.path().string() + "/cache", true);
  REQUIRE(cache);
  const std::string big = tmp.path().string() + "/big.h";
  write_file(big, "const char* built = __DATE__;\n" + std::string(100, '/') + "\n");
  kbuild_test::FakeFileClock clock;
  clock.advance();  // settled: a file still being written is never remembered
  std::string first;
  {
    EarlyDigests early(clock, &*cache, 64);
    early.foresee({big});
    early.finish(true);
    const EarlyDigests::Look* look = early.find(big, early_digests_stat(big));
    REQUIRE(look);
    first = look->digest;
  }
  // Remembered under the file's identity in the cache's digests/.
  const auto remembered =
      std::distance(std::filesystem::directory_iterator(tmp.path() / "cache" / "digests"), {});
  CHECK(remembered == 1);
  EarlyDigests again(clock, &*cache, 64);
  again.foresee({big});
  again.finish(true);
  const EarlyDigests::Look* look = again.find(big, early_digests_stat(big));
  REQUIRE(look);
  CHECK(look->digest == first);
  // Its digest came unread; the scan read it all the same.
  CHECK(look->scanned);
  CHECK(look->mentions_clock);
}

namespace {

// Bytes this process has read so far (every thread's read and pread).
std::size_t early_digests_bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string name;
  std::size_t value = 0;
  while (io >> name >> value)
    if (name == "rchar:") return value;
  FAIL("no rchar in /proc/self/io");
  return 0;
}

}  // namespace

TEST_CASE("finish() ends the scan of a remembered file's bytes too, not at the file's end",
          "[early_digests]") {
  TempDir tmp;
  auto cache = kbuild::TrustedDir::open(tmp.path().string() + "/cache", true);
  REQUIRE(cache);
  // Text for its first 8 KiB (no NUL: not a binary), then a hole of 1 GiB:
  // read as zeros, quickly, and never on disk.
  const std::string big = tmp.path().string() + "/big.h";
  write_file(big, std::string(8192, 'x'));
  constexpr std::size_t kSize = std::size_t{1} << 30;
  REQUIRE(::truncate(big.c_str(), static_cast<off_t>(kSize)) == 0);
  kbuild_test::FakeFileClock clock;
  clock.advance();  // settled: remembered
  {
    EarlyDigests early(clock, &*cache, 64);
    early.foresee({big});
    early.finish(true);
    REQUIRE(early.find(big, early_digests_stat(big)));
  }
  // Its digest remembered, only the scan reads the file now: once it has
  // read 8 MiB, finish() must end it within a MiB or so, as it ends a hash.
  EarlyDigests again(clock, &*cache, 64);
  const std::size_t start = early_digests_bytes_read();
  again.foresee({big});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (early_digests_bytes_read() - start < (std::size_t{8} << 20) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  again.finish();
  CHECK(early_digests_bytes_read() - start < kSize / 4);
}
