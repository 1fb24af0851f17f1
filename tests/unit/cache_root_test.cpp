// cache_root and open_cache_root: where the cache is, and adopting only a
// directory that is kbuild's (marked, or empty, or kbuild's own layout).
#include "util/trusted_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

const char* kSignature = "Signature: 8a477f597d28d172789f06886806bc55\n";

bool marked(const std::string& dir) {
  return fs::exists(dir + "/CACHEDIR.TAG") &&
         read_file(dir + "/CACHEDIR.TAG").rfind(kSignature, 0) == 0;
}

}  // namespace

TEST_CASE("cache_root: KBUILD_CACHE_DIR, else XDG_CACHE_HOME/kbuild, else HOME/.cache/kbuild",
          "[unit][cache_root]") {
  Environment env{{{"HOME", "/h"}}};
  CHECK(cache_root(env) == "/h/.cache/kbuild");
  env.set("XDG_CACHE_HOME", "/x");
  CHECK(cache_root(env) == "/x/kbuild");
  env.set("KBUILD_CACHE_DIR", "/k");
  CHECK(cache_root(env) == "/k");
  env.set("KBUILD_CACHE_DIR", "");  // empty counts as unset
  CHECK(cache_root(env) == "/x/kbuild");
  CHECK(cache_root(Environment{{{"HOME", ""}, {"XDG_CACHE_HOME", ""}}}) == "");
  CHECK(cache_root(Environment()) == "");
}

TEST_CASE("a new cache directory is created and marked", "[unit][cache_root]") {
  TempDir tmp;
  Result<TrustedDir> dir = open_cache_root(tmp / "a/cache", true);
  REQUIRE(dir);
  CHECK(marked(tmp / "a/cache"));
  CHECK(dir->path() == tmp / "a/cache");
  Result<TrustedDir> missing = open_cache_root(tmp / "missing", false);
  REQUIRE_FALSE(missing);
  CHECK(missing.why() == "cache directory " + tmp / "missing" + " does not exist");
  CHECK_FALSE(fs::exists(tmp / "missing"));
  Result<TrustedDir> none = open_cache_root("", true);
  REQUIRE_FALSE(none);
  CHECK(none.why() == kNoCacheRoot);
}

TEST_CASE("an empty directory, or one holding only kbuild's layout, is adopted",
          "[unit][cache_root]") {
  TempDir tmp;
  fs::create_directory(tmp / "empty");
  CHECK(open_cache_root(tmp / "empty", false));
  CHECK(marked(tmp / "empty"));

  const std::string old = tmp / "old";
  fs::create_directories(old + "/objects/ab");
  fs::create_directories(old + "/pch/" + std::string(40, 'f'));
  fs::create_directories(old + "/discovery/python-1234");
  fs::create_directories(old + "/tmp");
  write_file(old + "/stats.json", "{}");
  CHECK(open_cache_root(old, false));
  CHECK(marked(old));
  CHECK(fs::exists(old + "/objects/ab"));
}

// Found by the e2e Ctrl-C lease test: two build-many children opening a new
// cache at once; one saw the other's marker half-written (its temporary
// file) and built without the cache, and so without the remote lease.
TEST_CASE("a directory whose marker another process is writing is adopted", "[unit][cache_root]") {
  TempDir tmp;
  const std::string root = tmp / "cache";
  fs::create_directory(root);
  write_file(root + "/.CACHEDIR.TAG.tmp.4242.1234abcd", "Signature: 8a47");
  CHECK(open_cache_root(root, false));
  CHECK(marked(root));
  // Processes racing to create one new cache directory all get it.
  for (int round = 0; round < 100; ++round) {
    const std::string fresh = tmp / ("race" + std::to_string(round));
    std::vector<pid_t> children;
    for (int i = 0; i < 4; ++i) {
      pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        Result<TrustedDir> dir = open_cache_root(fresh, true);
        // Then what a build does first: a work directory under tmp/.
        ::_exit(dir && dir->sub("tmp/work." + std::to_string(::getpid()), true) ? 0 : 1);
      }
      children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    INFO("round " << round);
    CHECK(failed == 0);
  }
}

TEST_CASE("a directory holding anything else is not kbuild's and is left alone",
          "[unit][cache_root]") {
  TempDir tmp;
  const std::vector<std::pair<std::string, bool>> strangers = {
      {"photos.jpg", false}, {"objects/holiday", true}, {"objects/xy", true},
      {"pch/short", true},   {"tmp/x", false},          {"discovery/other", false}};
  for (std::size_t i = 0; i < strangers.size(); ++i) {
    const auto& [entry, is_dir] = strangers[i];
    const std::string root = tmp / ("case" + std::to_string(i));
    fs::create_directories(fs::path(root + "/" + entry).parent_path());
    if (is_dir)
      fs::create_directory(root + "/" + entry);
    else
      write_file(root + "/" + entry, "mine");
    Result<TrustedDir> dir = open_cache_root(root, true);
    REQUIRE_FALSE(dir);
    CHECK(dir.why() == "cache directory " + root +
                           " is not kbuild's (no CACHEDIR.TAG, and it holds other files); set "
                           "KBUILD_CACHE_DIR to an empty or new directory");
    CHECK_FALSE(fs::exists(root + "/CACHEDIR.TAG"));
  }
  // "objects" that is a file, or a link, is not kbuild's layout either.
  write_file(tmp / "file/objects", "");
  CHECK_FALSE(open_cache_root(tmp / "file", false));
  fs::create_directories(tmp / "link");
  fs::create_directory_symlink(tmp.path(), tmp / "link/objects");
  CHECK_FALSE(open_cache_root(tmp / "link", false));
}

TEST_CASE("a marked directory is used whatever it holds; a forged marker is not a mark",
          "[unit][cache_root]") {
  TempDir tmp;
  write_file(tmp / "c/CACHEDIR.TAG", std::string(kSignature) + "# someone else's\n");
  write_file(tmp / "c/notes.txt", "x");
  CHECK(open_cache_root(tmp / "c", false));
  write_file(tmp / "d/CACHEDIR.TAG", "Signature: wrong\n");
  write_file(tmp / "d/notes.txt", "x");
  CHECK_FALSE(open_cache_root(tmp / "d", false));
}

TEST_CASE("an untrusted cache directory is refused with what to do", "[unit][cache_root]") {
  TempDir tmp;
  fs::create_directory(tmp / "open");
  ::chmod((tmp / "open").c_str(), 0777);
  Result<TrustedDir> dir = open_cache_root(tmp / "open", false);
  REQUIRE_FALSE(dir);
  CHECK(dir.why().rfind("cache directory " + tmp / "open" + " is world-writable", 0) == 0);
  CHECK(dir.why().find("set KBUILD_CACHE_DIR") != std::string::npos);
}

TEST_CASE("clear_cache removes kbuild's entries only, and only in a marked directory",
          "[unit][cache_root]") {
  TempDir tmp;
  Result<TrustedDir> dir = open_cache_root(tmp / "c", true);
  REQUIRE(dir);
  fs::create_directories(tmp / "c/objects/ab/cd");
  fs::create_directories(tmp / "c/pch");
  write_file(tmp / "c/stats.json", "{}");
  write_file(tmp / "c/.stats.json.tmp.1.2", "");
  write_file(tmp / "c/README", "the user's");
  REQUIRE(clear_cache(*dir));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp / "c")) left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"CACHEDIR.TAG", "README"});

  fs::create_directories(tmp / "plain/objects");
  Result<TrustedDir> plain = TrustedDir::open(tmp / "plain", false);
  REQUIRE(plain);
  Status refused = clear_cache(*plain);
  REQUIRE_FALSE(refused);
  CHECK(refused.why().find("not marked as kbuild's cache") != std::string::npos);
  CHECK(fs::exists(tmp / "plain/objects"));
}

namespace {

struct stat stated(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return st;
}

bool same_inode(const TrustedDir& dir, const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && stated(dir.fd()).st_ino == st.st_ino &&
         stated(dir.fd()).st_dev == st.st_dev;
}

}  // namespace

TEST_CASE("the discovery directory, kept open, is checked again on every later open",
          "[unit][cache_root]") {
  TempDir tmp;
  const std::string root = tmp / "c";
  Result<TrustedDir> first = open_discovery_dir(root, true);
  REQUIRE(first);
  CHECK(marked(root));
  CHECK(first->path() == root + "/discovery");
  CHECK(same_inode(*first, root + "/discovery"));
  CHECK((::fcntl(first->fd(), F_GETFD) & FD_CLOEXEC) != 0);

  Result<TrustedDir> again = open_discovery_dir(root, false);
  REQUIRE(again);
  CHECK(same_inode(*again, root + "/discovery"));
  CHECK((::fcntl(again->fd(), F_GETFD) & FD_CLOEXEC) != 0);

  // Made writable by others since: refused, as a first open would be.
  ::chmod(root.c_str(), 0777);
  CHECK_FALSE(open_discovery_dir(root, false));
  ::chmod(root.c_str(), 0755);
  ::chmod((root + "/discovery").c_str(), 0777);
  CHECK_FALSE(open_discovery_dir(root, false));
  ::chmod((root + "/discovery").c_str(), 0755);
  CHECK(open_discovery_dir(root, false));
  // Given to another user since (kbuild runs as root here: a uid no one has).
  REQUIRE(::chown((root + "/discovery").c_str(), 4242, 4242) == 0);
  CHECK_FALSE(open_discovery_dir(root, false));
  REQUIRE(::chown((root + "/discovery").c_str(), ::geteuid(), ::getegid()) == 0);
  REQUIRE(::chown(root.c_str(), 4242, 4242) == 0);
  CHECK_FALSE(open_discovery_dir(root, false));
  REQUIRE(::chown(root.c_str(), ::geteuid(), ::getegid()) == 0);
  CHECK(open_discovery_dir(root, false));

  // Cleared (discovery/ removed): made and opened anew.
  fs::remove_all(root + "/discovery");
  Result<TrustedDir> remade = open_discovery_dir(root, false);
  REQUIRE(remade);
  CHECK(same_inode(*remade, root + "/discovery"));
  // A link put in its place is not followed.
  fs::rename(root + "/discovery", tmp / "elsewhere");
  fs::create_directory_symlink(tmp / "elsewhere", root + "/discovery");
  CHECK_FALSE(open_discovery_dir(root, false));
  fs::remove(root + "/discovery");
  fs::rename(tmp / "elsewhere", root + "/discovery");

  // Another directory put at the path: that one, opened and checked anew.
  fs::rename(root, tmp / "old");
  Result<TrustedDir> moved = open_discovery_dir(root, false);
  CHECK_FALSE(moved);  // not there, and not created
  fs::create_directory(root);
  write_file(root + "/foreign.txt", "the user's");
  CHECK_FALSE(open_discovery_dir(root, false));  // not kbuild's
  fs::remove(root + "/foreign.txt");
  Result<TrustedDir> fresh = open_discovery_dir(root, false);
  REQUIRE(fresh);
  CHECK(same_inode(*fresh, root + "/discovery"));
  CHECK_FALSE(same_inode(*fresh, tmp / "old/discovery"));
}
