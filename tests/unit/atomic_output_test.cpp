// AtomicOutput: a private, locked work directory beside the output; the
// result renamed over the output whole, or nothing changed at all.
#include "util/trusted_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

// Entries of `dir` other than `except`.
std::vector<std::string> litter(const fs::path& dir, const std::string& except = "") {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != except) names.push_back(e.path().filename().string());
  return names;
}

Error error_of(const std::string& output) {
  try {
    AtomicOutput out(output);
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected an output error");
  return Error(ErrorKind::internal, "");
}

}  // namespace

TEST_CASE("the result is written in a private work directory and renamed over the output",
          "[unit][atomic_output]") {
  TempDir tmp;
  write_file(tmp / "k.so", "old");
  {
    AtomicOutput out(tmp / "k.so");
    CHECK(fs::path(out.path()).filename() == "k.so");
    CHECK(fs::path(out.path()).parent_path() == out.work_dir());
    CHECK(fs::path(out.work_dir()).parent_path() == tmp.path());
    CHECK((fs::status(out.work_dir()).permissions() & fs::perms::all) == fs::perms::owner_all);
    CHECK(out.scratch("a.o") == out.work_dir() + "/a.o");
    write_file(out.path(), "new");
    write_file(out.scratch("a.o"), "object");
    CHECK(read_file(tmp / "k.so") == "old");  // untouched until commit
    out.commit();
    CHECK(read_file(tmp / "k.so") == "new");
  }
  CHECK(litter(tmp.path(), "k.so").empty());
}

TEST_CASE("without commit the output is untouched and nothing is left", "[unit][atomic_output]") {
  TempDir tmp;
  write_file(tmp / "k.so", "old");
  {
    AtomicOutput out(tmp / "k.so");
    write_file(out.path(), "half");
    fs::create_directories(out.scratch("sub/dir"));
    write_file(out.scratch("sub/dir/f"), "x");
  }
  CHECK(read_file(tmp / "k.so") == "old");
  CHECK(litter(tmp.path(), "k.so").empty());
}

TEST_CASE("commit refuses a missing result, or one that is not a regular file",
          "[unit][atomic_output]") {
  TempDir tmp;
  write_file(tmp / "secret", "secret");
  {
    AtomicOutput out(tmp / "k.so");
    CHECK_THROWS_AS(out.commit(), Error);
    fs::create_symlink(tmp / "secret", out.path());
    try {
      out.commit();
      FAIL("a link was committed");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::output);
      CHECK(std::string(e.what()).find("cannot move the result into " + tmp / "k.so") !=
            std::string::npos);
    }
    CHECK_FALSE(out.open_result());
  }
  CHECK_FALSE(fs::exists(fs::symlink_status(tmp / "k.so")));
  CHECK(read_file(tmp / "secret") == "secret");
}

TEST_CASE("an output that is a directory, FIFO or link is refused before anything is made",
          "[unit][atomic_output]") {
  TempDir tmp;
  fs::create_directory(tmp / "dir.so");
  ::mkfifo((tmp / "fifo.so").c_str(), 0600);
  for (const char* name : {"dir.so", "fifo.so"}) {
    Error e = error_of(tmp / name);
    CHECK(e.kind() == ErrorKind::output);
    CHECK(std::string(e.what()) == "output " + tmp / name +
                                       " exists and is not a regular file; refusing to replace "
                                       "it: remove it or choose another -o");
  }
  CHECK(litter(tmp.path()).size() == 2);

  Error missing = error_of(tmp / "no/such/dir/k.so");
  CHECK(missing.kind() == ErrorKind::output);
  CHECK(std::string(missing.what()).find("create it first") != std::string::npos);
}

TEST_CASE("a FIFO that appears at the output while the build runs is not replaced",
          "[unit][atomic_output]") {
  TempDir tmp;
  AtomicOutput out(tmp / "k.so");
  write_file(out.path(), "new");
  ::mkfifo((tmp / "k.so").c_str(), 0600);
  CHECK_THROWS_AS(out.commit(), Error);
  CHECK(fs::is_fifo(tmp / "k.so"));
}

TEST_CASE("create_result makes a new file with the mode asked (less the umask), never twice",
          "[unit][atomic_output]") {
  TempDir tmp;
  AtomicOutput out(tmp / "k.so");
  mode_t mask = ::umask(022);
  Result<UniqueFd> fd = out.create_result(0777);
  ::umask(mask);
  REQUIRE(fd);
  CHECK(write_all(fd->get(), "cached", out.path()));
  CHECK((fs::status(out.path()).permissions() & fs::perms::all) ==
        (fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
         fs::perms::others_read | fs::perms::others_exec));
  CHECK_FALSE(out.create_result(0644));  // exists
  REQUIRE(out.open_result());
  out.discard_result();
  CHECK_FALSE(fs::exists(out.path()));
  CHECK(out.create_result(0644));
}

TEST_CASE("dead builds' work directories are removed; live, young or others' are kept",
          "[unit][atomic_output]") {
  TempDir tmp;
  const std::string dead = tmp / ".k.so.kbuild-tmp.1.dead";
  const std::string live = tmp / ".k.so.kbuild-tmp.2.live";
  const std::string young = tmp / ".k.so.kbuild-new.3.young";
  const std::string others = tmp / ".k.so.kbuild-tmp.4.others";
  const std::string unrelated = tmp / ".other.so.kbuild-tmp.5.dead";
  for (const std::string& d : {dead, live, young, others, unrelated}) {
    fs::create_directories(d + "/sub");
    write_file(d + "/sub/f", "x");
  }
  REQUIRE(::chown(others.c_str(), ::geteuid() + 4242, 0) == 0);
  int lock = ::open(live.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(lock >= 0);
  REQUIRE(::flock(lock, LOCK_EX) == 0);  // a build that still runs

  remove_dead_work_dirs(tmp / "k.so");
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live + "/sub/f"));
  CHECK(fs::exists(young + "/sub/f"));
  CHECK(fs::exists(others + "/sub/f"));
  CHECK(fs::exists(unrelated + "/sub/f"));
  ::close(lock);

  AtomicOutput out(tmp / "k.so");  // the constructor cleans up too
  CHECK_FALSE(fs::exists(live));
  CHECK(fs::exists(young));
}

TEST_CASE("a work directory name that is a link is removed, never followed",
          "[unit][atomic_output]") {
  TempDir tmp;
  fs::create_directory(tmp / "victim");
  write_file(tmp / "victim/keep", "keep");
  fs::create_directory_symlink(tmp / "victim", tmp / ".k.so.kbuild-tmp.1.link");
  remove_dead_work_dirs(tmp / "k.so");
  CHECK_FALSE(fs::exists(fs::symlink_status(tmp / ".k.so.kbuild-tmp.1.link")));
  CHECK(read_file(tmp / "victim/keep") == "keep");
}

TEST_CASE("the work directory is locked while the build runs", "[unit][atomic_output]") {
  TempDir tmp;
  AtomicOutput out(tmp / "k.so");
  int fd = ::open(out.work_dir().c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  CHECK(::flock(fd, LOCK_EX | LOCK_NB) != 0);
  ::close(fd);
  remove_dead_work_dirs(tmp / "k.so");
  CHECK(fs::is_directory(out.work_dir()));
}

TEST_CASE("started() is the work directory's birth on the file system clock",
          "[unit][atomic_output]") {
  TempDir tmp;
  write_file(tmp / "before", "");
  AtomicOutput out(tmp / "k.so");
  struct stat st {};
  REQUIRE(::stat((tmp / "before").c_str(), &st) == 0);
  const auto ns = [](const struct timespec& t) {
    return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
  };
  CHECK(ns(out.started()) >= ns(st.st_mtim));
  CHECK(ns(out.started()) > 0);
}
