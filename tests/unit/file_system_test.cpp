// The file-system seam (util/file_system.hpp): when a file counts as
// settled (both its times at least the settle age old on the clock, which
// tests move by hand), and the fake in tests/support answering as the real
// file system does, so tests that use it test what builds see.
#include "util/file_system.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "../support/fake_file_clock.hpp"
#include "../support/fake_file_system.hpp"
#include "../support/test_support.hpp"

using namespace kbuild;
using namespace kbuild_test;
using namespace std::chrono_literals;

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
  CHECK_FALSE(file_system().settled(stated(tmp / "f")));  // the system clock, two seconds
  FakeFileClock clock;
  CHECK_FALSE(file_system().settled(stated(tmp / "f")));
  clock.advance(1500ms);
  CHECK_FALSE(file_system().settled(stated(tmp / "f")));
  clock.advance(600ms);
  CHECK(file_system().settled(stated(tmp / "f")));
  clock.rewind();
  CHECK_FALSE(file_system().settled(stated(tmp / "f")));
}

TEST_CASE("a file dated back but changed just now is not settled: its inode change time counts",
          "[unit][file_system]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  fs::last_write_time(tmp / "f", fs::file_time_type::clock::now() - std::chrono::hours(1));
  FakeFileClock clock;
  CHECK_FALSE(file_system().settled(stated(tmp / "f")));
  clock.advance();
  CHECK(file_system().settled(stated(tmp / "f")));
}

TEST_CASE(
    "a file system with no settle age takes every file as settled; the system one is back after "
    "it",
    "[unit][file_system]") {
  TempDir tmp;
  write_file(tmp / "f", "x");
  {
    SystemFileSystem immediate(0ns);
    ScopedFileSystem installed(immediate);
    CHECK(file_system().settled(stated(tmp / "f")));
  }
  CHECK_FALSE(file_system().settled(stated(tmp / "f")));
}

TEST_CASE("settling on the fake clock: exactly the settle age after the last change",
          "[unit][file_system]") {
  FakeFileSystem files;
  files.write("/src/a.h", "int a;");
  CHECK_FALSE(file_system().settled(*file_system().status("/src/a.h")));
  files.advance(1999ms);
  CHECK_FALSE(file_system().settled(*file_system().status("/src/a.h")));
  files.advance(1ms);
  CHECK(file_system().settled(*file_system().status("/src/a.h")));
  // Dated back an hour: changed now all the same, so recent again.
  files.set_mtime("/src/a.h", {files.now().tv_sec - 3600, 0});
  CHECK_FALSE(file_system().settled(*file_system().status("/src/a.h")));
  files.advance(2s);
  CHECK(file_system().settled(*file_system().status("/src/a.h")));
  // A clock set back makes every file recent (its times are in the future).
  files.set_now({files.now().tv_sec - 60, 0});
  CHECK_FALSE(file_system().settled(*file_system().status("/src/a.h")));
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
  CHECK(&file_system() == &files);
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
