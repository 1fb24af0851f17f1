// The file-system seam (util/file_system.hpp): when a file counts as
// settled (both its times at least the settle age old on the clock, which
// tests move by hand), and the fake in tests/support answering as the real
// file system does, so tests that use it test what builds see.
#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <set>

#include <catch2/catch.hpp>

#include "../support/fake_file_clock.hpp"
#include "../support/fake_file_system.hpp"
#include "../support/test_support.hpp"
#include "util/file_system.hpp"

using namespace kbuild;
using namespace kbuild_test;
using namespace std::chrono_literals;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace {

struct stat stated(const fs::path& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st;
}

}  // namespace

TEST_CASE("a file just written is not settled until the settle age has passed",
          "[unit][file_system]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  CHECK_FALSE(system_file_system().settled(stated(tmp / "f")));  // the system clock, two seconds
  FakeFileClock clock;
  CHECK_FALSE(clock.settled(stated(tmp / "f")));
  clock.advance(1500ms);
  CHECK_FALSE(clock.settled(stated(tmp / "f")));
  clock.advance(600ms);
  CHECK(clock.settled(stated(tmp / "f")));
  clock.rewind();
  CHECK_FALSE(clock.settled(stated(tmp / "f")));
}

TEST_CASE("a file dated back but changed just now is not settled: its inode change time counts",
          "[unit][file_system]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  fs::last_write_time(tmp / "f", fs::file_time_type::clock::now() - std::chrono::hours(1));
  FakeFileClock clock;
  CHECK_FALSE(clock.settled(stated(tmp / "f")));
  clock.advance();
  CHECK(clock.settled(stated(tmp / "f")));
}

TEST_CASE("a file system with no settle age takes every file as settled; the system one does not",
          "[unit][file_system]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  SystemFileSystem immediate(0ns);
  CHECK(immediate.settled(stated(tmp / "f")));
  CHECK_FALSE(system_file_system().settled(stated(tmp / "f")));
}

TEST_CASE("settling on the fake clock: exactly the settle age after the last change",
          "[unit][file_system]") {
  FakeFileSystem files;
  files.write("/src/a.h", "int a;");
  CHECK_FALSE(files.settled(*files.status("/src/a.h")));
  files.advance(1999ms);
  CHECK_FALSE(files.settled(*files.status("/src/a.h")));
  files.advance(1ms);
  CHECK(files.settled(*files.status("/src/a.h")));
  // Dated back an hour: changed now all the same, so recent again.
  files.set_mtime("/src/a.h", {files.now().tv_sec - 3600, 0});
  CHECK_FALSE(files.settled(*files.status("/src/a.h")));
  files.advance(2s);
  CHECK(files.settled(*files.status("/src/a.h")));
  // A clock set back makes every file recent (its times are in the future).
  files.set_now({files.now().tv_sec - 60, 0});
  CHECK_FALSE(files.settled(*files.status("/src/a.h")));
}

TEST_CASE("the fake file system stamps as the real one does: size, times, a new inode per file",
          "[unit][file_system]") {
  FakeFileSystem files;
  files.write("/d/a", "abc");
  const struct stat a = *files.status("/d/a");
  CHECK(S_ISREG(a.st_mode));
  CHECK(a.st_size == 3);
  CHECK(a.st_mtim.tv_sec == files.now().tv_sec);
  CHECK(S_ISDIR(files.status("/d")->st_mode));
  files.advance(5s);
  files.write("/d/a", "abcd");  // rewritten in place: same inode, new size and times
  const struct stat again = *files.status("/d/a");
  CHECK(again.st_ino == a.st_ino);
  CHECK(again.st_size == 4);
  CHECK(again.st_mtim.tv_sec == a.st_mtim.tv_sec + 5);
  files.remove("/d/a");
  CHECK_FALSE(files.status("/d/a"));
  files.write("/d/a", "abcd");  // a new file in its place
  CHECK(files.status("/d/a")->st_ino != a.st_ino);
}

TEST_CASE("the fake file system answers read, list and real_path as the real one does",
          "[unit][file_system]") {
  // One tree, on disk and in the fake, at the same absolute paths.
  TempDir tmp;
  const std::string root = fs::canonical(tmp.path()).string();
  SystemFileSystem disk;
  FakeFileSystem memory;
  write_file(root + "/inc/b.h", "b");
  write_file(root + "/inc/a.h", "aaaa");
  fs::create_directories(root + "/inc/sub");
  fs::create_symlink("inc", root + "/link");
  fs::create_symlink("../a.h", root + "/inc/sub/up");
  memory.write(root + "/inc/b.h", "b");
  memory.write(root + "/inc/a.h", "aaaa");
  memory.make_directories(root + "/inc/sub");
  memory.symlink(root + "/link", "inc");
  memory.symlink(root + "/inc/sub/up", "../a.h");
  for (const FileSystem* each :
       {static_cast<const FileSystem*>(&disk), static_cast<const FileSystem*>(&memory)}) {
    const FileSystem& files = *each;
    INFO((each == &disk ? "disk" : "memory"));
    CHECK(*files.list(root + "/inc") == std::vector<std::string>{"a.h", "b.h", "sub"});
    CHECK(*files.list(root + "/link") == std::vector<std::string>{"a.h", "b.h", "sub"});
    CHECK(files.list(root + "/inc/a.h").why() == root + "/inc/a.h: Not a directory");
    CHECK(files.list(root + "/none").why() == root + "/none: No such file or directory");
    CHECK(*files.read(root + "/link/a.h", 100) == "aaaa");
    CHECK(*files.read(root + "/inc/a.h", 2) == "aa");
    CHECK(files.read(root + "/inc", 100).why() == root + "/inc: not a regular file");
    CHECK(files.read(root + "/none", 100).why() == root + "/none: No such file or directory");
    CHECK(*files.real_path(root + "/link/./sub/../b.h") == root + "/inc/b.h");
    CHECK(*files.real_path(root + "/inc/sub/up") == root + "/inc/a.h");
    // ".." leaves where the link led, not where its name stood.
    CHECK(*files.real_path(root + "/link/sub/..") == root + "/inc");
    CHECK_FALSE(files.real_path(root + "/inc/a.h/x"));
    CHECK_FALSE(files.real_path(root + "/none"));
    CHECK(files.status(root + "/link/b.h")->st_size == 1);
    CHECK(S_ISDIR(files.status(root + "/link")->st_mode));
    CHECK_FALSE(files.status(root + "/none"));
  }
}

// file_util: whole-file reads, atomic writes, SHA-1, unique names, mtimes.
namespace fs = std::filesystem;

TEST_CASE("read_whole_file: bytes as they are, or why they cannot be read", "[unit][file_util]") {
  TempDir tmp;
  const std::string bytes("a\0b\r\n\xff", 6);
  write_file(tmp / "f", bytes);
  write_file(tmp / "empty", "");
  CHECK(*read_whole_file(tmp / "f") == bytes);
  CHECK(*read_whole_file(tmp / "empty") == "");
  Result<std::string> missing = read_whole_file(tmp / "missing");
  REQUIRE_FALSE(missing);
  CHECK(missing.why() == tmp / "missing" + ": No such file or directory");
  Result<std::string> directory = read_whole_file(tmp.str());  // a directory cannot be read
  REQUIRE_FALSE(directory);
  CHECK(directory.why() == tmp.str() + ": Is a directory");
}

TEST_CASE("read_file_up_to stops at the limit", "[unit][file_util]") {
  TempDir tmp;
  std::string big(40000, 'x');
  big[39999] = 'y';
  write_file(tmp / "big", big);
  CHECK(*read_file_up_to(tmp / "big", 10) == std::string(10, 'x'));
  CHECK(*read_file_up_to(tmp / "big", 0) == "");
  CHECK(*read_file_up_to(tmp / "big", 1u << 20) == big);
  CHECK(*read_file_up_to(tmp / "big", 40000) == big);
  CHECK(read_file_up_to(tmp / "missing", 10).why() ==
        tmp / "missing" + ": No such file or directory");
  CHECK(read_file_up_to(tmp.str(), 10).why() == tmp.str() + ": Is a directory");
}

TEST_CASE("read_regular_file_up_to: a regular file, up to the limit; a FIFO is never opened",
          "[unit][file_util]") {
  TempDir tmp;
  write_file(tmp / "f", "0123456789");
  Result<std::string> whole = read_regular_file_up_to(tmp / "f", 100);
  REQUIRE(whole);
  CHECK(*whole == "0123456789");
  CHECK(*read_regular_file_up_to(tmp / "f", 4) == "0123");
  fs::create_symlink(tmp / "f", tmp / "link");
  CHECK(*read_regular_file_up_to(tmp / "link", 100) == "0123456789");
  // Nothing writes this FIFO: opening it to read would block.
  REQUIRE(::mkfifo((tmp / "fifo").c_str(), 0600) == 0);
  fs::create_directories(tmp / "dir");
  for (const std::string& special : {tmp / "fifo", tmp / "dir", std::string("/dev/null")}) {
    Result<std::string> refused = read_regular_file_up_to(special, 100);
    CHECK_FALSE(refused);
    CHECK(refused.why() == special + ": not a regular file");
  }
  CHECK(read_regular_file_up_to(tmp / "missing", 100).why() ==
        tmp / "missing" + ": No such file or directory");
}

TEST_CASE("check_replaceable: only an absent path or a regular file may be replaced",
          "[unit][file_util]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  fs::create_directory(tmp / "d");
  ::mkfifo((tmp / "fifo").c_str(), 0600);
  fs::create_symlink(tmp / "f", tmp / "link");
  fs::create_symlink(tmp / "fifo", tmp / "link-to-fifo");
  CHECK(check_replaceable(tmp / "f"));
  CHECK(check_replaceable(tmp / "missing"));
  CHECK(check_replaceable(tmp / "link"));
  CHECK(check_replaceable(tmp / "d").why() == tmp / "d" + " is a directory");
  CHECK(check_replaceable(tmp / "fifo").why() ==
        tmp / "fifo" + " is not a regular file; kbuild replaces only regular files");
  CHECK_FALSE(check_replaceable(tmp / "link-to-fifo"));
  CHECK_FALSE(check_replaceable("/dev/null"));
}

TEST_CASE("write_file_atomically creates parents, replaces whole, leaves no temporary",
          "[unit][file_util]") {
  TempDir tmp;
  REQUIRE(write_file_atomically(tmp / "a/b/f.json", "one"));
  REQUIRE(write_file_atomically(tmp / "a/b/f.json", "two"));
  CHECK(read_file(tmp / "a/b/f.json") == "two");
  REQUIRE(write_file_atomically(tmp / "a/b/empty", ""));
  CHECK(read_file(tmp / "a/b/empty") == "");
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp / "a/b")) names.insert(e.path().filename());
  CHECK(names == std::set<std::string>{"f.json", "empty"});
}

TEST_CASE("write_file_atomically replaces a link by a file and fails over a directory",
          "[unit][file_util]") {
  TempDir tmp;
  write_file(tmp / "target", "keep");
  fs::create_symlink(tmp / "target", tmp / "link");
  REQUIRE(write_file_atomically(tmp / "link", "new"));
  CHECK(fs::is_regular_file(fs::symlink_status(tmp / "link")));
  CHECK(read_file(tmp / "target") == "keep");

  fs::create_directories(tmp / "d/inside");
  Status over_dir = write_file_atomically(tmp / "d", "x");
  REQUIRE_FALSE(over_dir);
  CHECK(over_dir.why().find("cannot rename into " + tmp / "d") == 0);
  CHECK(fs::is_directory(tmp / "d/inside"));
  CHECK(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()) == 3);

  write_file(tmp / "file", "");
  Status under_file = write_file_atomically(tmp / "file/x", "x");
  REQUIRE_FALSE(under_file);
  CHECK(under_file.why().find("cannot create " + tmp / "file") == 0);
}

TEST_CASE("SHA-1: the published test vectors, whole or fed in pieces", "[unit][file_util]") {
  CHECK(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  Sha1 pieces;
  pieces.add("abcdbcdecdefdefgefghfghighij");
  pieces.add(std::string("hijkijkljklmklmnlmnomnopnopq"));
  CHECK(pieces.hex() == "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(sha1_hex(std::string(1, '\0')) == "5ba93c9db0cff93f52b521d7420e43f6eda2784f");
}

TEST_CASE("unique_suffix: this process's id, and a new value each time", "[unit][file_util]") {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string s = unique_suffix();
    CHECK(s.rfind(std::to_string(::getpid()) + ".", 0) == 0);
    CHECK(s.find('/') == std::string::npos);
    seen.insert(s);
  }
  CHECK(seen.size() == 200);
}

TEST_CASE("mtime_ns and is_directory follow links; missing is -1 and false", "[unit][file_util]") {
  TempDir tmp;
  write_file(tmp / "f", "");
  const auto when = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(tmp / "f", when);
  struct stat st {};
  REQUIRE(::stat((tmp / "f").c_str(), &st) == 0);
  CHECK(mtime_ns(tmp / "f") == st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
  CHECK(mtime_ns(tmp / "missing") == -1);
  fs::create_directory(tmp / "d");
  fs::create_directory_symlink(tmp / "d", tmp / "dlink");
  CHECK(is_directory(tmp / "d"));
  CHECK(is_directory(tmp / "dlink"));
  CHECK_FALSE(is_directory(tmp / "f"));
  CHECK_FALSE(is_directory(tmp / "missing"));
}
