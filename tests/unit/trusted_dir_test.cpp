// TrustedDir: every open relative to an opened directory, no link followed,
// every directory and file checked for its owner and mode as it is opened.
#include "util/trusted_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <thread>
#include <vector>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

struct stat stat_with(mode_t mode, uid_t uid) {
  struct stat st {};
  st.st_mode = S_IFDIR | mode;
  st.st_uid = uid;
  st.st_gid = 0;
  return st;
}

// check_ownership reads the ACLs at a path: one that has none, for the
// made-up statuses above.
std::string trusted_dir_test_plain_path() {
  static TempDir plain;
  return plain.str();
}

// Whether setfacl (Debian's acl package) is installed.
bool trusted_dir_test_has_setfacl() {
  return ::access("/usr/bin/setfacl", X_OK) == 0 || ::access("/bin/setfacl", X_OK) == 0;
}

// An ACL's bytes as the kernel keeps them (version 2, little-endian
// {tag, perm, id} entries).
std::string trusted_dir_test_acl(const std::vector<std::array<std::uint32_t, 3>>& entries) {
  std::string bytes;
  auto put = [&](std::uint32_t value, int size) {
    for (int i = 0; i < size; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  };
  put(2, 4);
  for (const auto& [tag, perm, id] : entries) {
    put(tag, 2);
    put(perm, 2);
    put(id, 4);
  }
  return bytes;
}

TrustedDir open_dir(const std::string& path) {
  Result<TrustedDir> dir = TrustedDir::open(path, false);
  REQUIRE(dir);
  return std::move(*dir);
}

}  // namespace

TEST_CASE("check_ownership: owner, world-writable and a shared group are refused",
          "[unit][trusted_dir]") {
  CHECK(check_ownership(stat_with(0755, ::geteuid()), trusted_dir_test_plain_path()));
  CHECK(check_ownership(stat_with(0755, 0), trusted_dir_test_plain_path()));  // root's
  auto other = check_ownership(stat_with(0755, ::geteuid() + 4242), trusted_dir_test_plain_path());
  REQUIRE_FALSE(other);
  CHECK(other.why().find("owned by uid " + std::to_string(::geteuid() + 4242)) !=
        std::string::npos);
  auto world = check_ownership(stat_with(0777, ::geteuid()), trusted_dir_test_plain_path());
  REQUIRE_FALSE(world);
  CHECK(world.why() == "is world-writable (mode 0777)");
  // A sticky world-writable directory is still writable by others.
  REQUIRE_FALSE(check_ownership(stat_with(01777, ::geteuid()), trusted_dir_test_plain_path()));
  // Group 4242424 is in no /etc/group: it counts as shared.
  struct stat group = stat_with(0775, ::geteuid());
  group.st_gid = 4242424;
  auto shared = check_ownership(group, trusted_dir_test_plain_path());
  REQUIRE_FALSE(shared);
  CHECK(shared.why().find("writable by group 4242424") != std::string::npos);
}

TEST_CASE("check_acl: a named user or shared group with write, under the mask, is refused",
          "[unit][trusted_dir]") {
  const std::uint32_t me = ::geteuid(), other = me + 4242;
  // user::rw- user:OTHER:rw- group::r-- mask::rw- other::r--: mode 0664.
  auto named = trusted_dir_test_acl(
      {{{0x01, 6, 0}}, {{0x02, 6, other}}, {{0x04, 4, 0}}, {{0x10, 6, 0}}, {{0x20, 4, 0}}});
  auto refused = check_acl(named, me, false);
  REQUIRE_FALSE(refused);
  CHECK(refused.why() == "has an ACL that lets uid " + std::to_string(other) + " write it");
  // The mask takes write away: no one else can write.
  auto masked = trusted_dir_test_acl(
      {{{0x01, 6, 0}}, {{0x02, 6, other}}, {{0x04, 4, 0}}, {{0x10, 4, 0}}, {{0x20, 4, 0}}});
  CHECK(check_acl(masked, me, false));
  // Read only, or the owner and root named: trusted.
  auto reader = trusted_dir_test_acl(
      {{{0x01, 6, 0}}, {{0x02, 4, other}}, {{0x02, 6, me}}, {{0x02, 6, 0}}, {{0x10, 6, 0}}});
  CHECK(check_acl(reader, me, false));
  // A group in no /etc/group counts as shared.
  auto group = trusted_dir_test_acl({{{0x01, 6, 0}}, {{0x08, 2, 4242424}}, {{0x10, 7, 0}}});
  auto shared = check_acl(group, me, false);
  REQUIRE_FALSE(shared);
  CHECK(shared.why().find("group 4242424, which has other members") != std::string::npos);
  // A default ACL whose "other" entry writes: what is created is world-writable.
  auto everyone = trusted_dir_test_acl({{{0x01, 7, 0}}, {{0x04, 5, 0}}, {{0x20, 7, 0}}});
  CHECK(check_acl(everyone, me, false));  // the access ACL's other is the mode's
  auto inherited = check_acl(everyone, me, true);
  REQUIRE_FALSE(inherited);
  CHECK(inherited.why() == "has a default ACL that lets everyone write what is created in it");
  // Not an ACL kbuild can read: refused, not trusted.
  CHECK_FALSE(check_acl("\x01\x00\x00\x00", me, false));
  CHECK_FALSE(check_acl(named.substr(0, named.size() - 3), me, false));
}

TEST_CASE("check_ownership reads a file's and a directory's ACLs (setfacl)",
          "[unit][trusted_dir]") {
  if (!trusted_dir_test_has_setfacl()) {
    WARN("setfacl not installed (Debian package acl): the ACL cases are not run");
    return;
  }
  TempDir dir;
  write_file(dir / "f.json", "{}\n");
  fs::permissions(dir / "f.json", fs::perms(0644));
  const std::string other = std::to_string(::geteuid() + 4242);
  REQUIRE(kbuild_test::run({"/usr/bin/setfacl", "-m", "u:" + other + ":rw", dir / "f.json"})
              .exit_code == 0);
  struct stat st {};
  REQUIRE(::stat((dir / "f.json").c_str(), &st) == 0);
  auto by_path = check_ownership(st, dir / "f.json");
  REQUIRE_FALSE(by_path);
  CHECK(by_path.why() == "has an ACL that lets uid " + other + " write it");
  int fd = ::open((dir / "f.json").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto by_fd = check_ownership(st, fd);
  ::close(fd);
  CHECK_FALSE(by_fd);
  // Read only: trusted.
  REQUIRE(
      kbuild_test::run({"/usr/bin/setfacl", "-m", "u:" + other + ":r", dir / "f.json"}).exit_code ==
      0);
  REQUIRE(::stat((dir / "f.json").c_str(), &st) == 0);
  CHECK(check_ownership(st, dir / "f.json"));
  // A directory's default ACL: refused by TrustedDir (the cache's rule).
  fs::create_directory(dir / "cache");
  REQUIRE(kbuild_test::run({"/usr/bin/setfacl", "-d", "-m", "u:" + other + ":rwx", dir / "cache"})
              .exit_code == 0);
  Result<TrustedDir> opened = TrustedDir::open(dir / "cache", false);
  REQUIRE_FALSE(opened);
  CHECK(opened.why().find("has a default ACL that lets uid " + other) != std::string::npos);
}

TEST_CASE("check_ownership answers from many threads at once (build-many's workers)",
          "[unit][trusted_dir]") {
  // Each group's answer is remembered for the process: threads asking about
  // new groups at the same time must not corrupt what is remembered.
  const std::string plain = trusted_dir_test_plain_path();
  std::vector<std::thread> workers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    workers.emplace_back([t, &wrong, &plain] {
      for (int i = 0; i < 1000; ++i) {
        struct stat group = stat_with(0775, ::geteuid());
        group.st_gid = static_cast<gid_t>(5000000 + i * 8 + t);  // in no /etc/group
        if (check_ownership(group, plain)) ++wrong;
      }
    });
  for (std::thread& w : workers) w.join();
  CHECK(wrong == 0);
}

TEST_CASE("open: a missing directory fails unless created; an untrusted one is refused",
          "[unit][trusted_dir]") {
  TempDir tmp;
  CHECK_FALSE(TrustedDir::open(tmp / "missing", false));
  CHECK_FALSE(TrustedDir::open("", true));
  Result<TrustedDir> made = TrustedDir::open(tmp / "a/b", true);
  REQUIRE(made);
  CHECK(fs::is_directory(tmp / "a/b"));
  CHECK(made->path() == tmp / "a/b");

  fs::create_directory(tmp / "open");
  ::chmod((tmp / "open").c_str(), 0777);
  Result<TrustedDir> open = TrustedDir::open(tmp / "open", false);
  REQUIRE_FALSE(open);
  CHECK(open.why() == tmp / "open" + " is world-writable (mode 0777)");

  write_file(tmp / "file", "x");
  Result<TrustedDir> file = TrustedDir::open(tmp / "file", false);
  REQUIRE_FALSE(file);
}

TEST_CASE("sub: each part opened without following a link and checked", "[unit][trusted_dir]") {
  TempDir tmp;
  TrustedDir root = open_dir(tmp.str());
  Result<TrustedDir> ab = root.sub("a/b", true);
  REQUIRE(ab);
  CHECK(ab->path() == tmp / "a/b");
  CHECK(fs::is_directory(tmp / "a/b"));
  CHECK(root.sub("a//b/", false));  // empty parts are skipped
  CHECK_FALSE(root.sub("", true));
  CHECK_FALSE(root.sub("/", true));
  CHECK_FALSE(root.sub("missing", false));

  fs::create_directory(tmp / "elsewhere");
  fs::create_directory_symlink(tmp / "elsewhere", tmp / "link");
  CHECK_FALSE(root.sub("link", false));
  CHECK_FALSE(root.sub("link/x", true));
  CHECK_FALSE(fs::exists(tmp / "elsewhere/x"));

  fs::create_directory(tmp / "open");
  ::chmod((tmp / "open").c_str(), 0757);
  Result<TrustedDir> open = root.sub("open", false);
  REQUIRE_FALSE(open);
  CHECK(open.why().find("world-writable") != std::string::npos);
}

TEST_CASE("open_file and read: regular, trusted files only, within the limit",
          "[unit][trusted_dir]") {
  TempDir tmp;
  write_file(tmp / "f", "hello");
  write_file(tmp / "target", "secret");
  fs::create_symlink(tmp / "target", tmp / "link");
  ::mkfifo((tmp / "fifo").c_str(), 0600);
  fs::create_directory(tmp / "dir");
  write_file(tmp / "shared", "x");
  ::chmod((tmp / "shared").c_str(), 0666);
  TrustedDir dir = open_dir(tmp.str());

  Result<std::string> f = dir.read("f");
  REQUIRE(f);
  CHECK(*f == "hello");
  CHECK(dir.read("f", 5));
  Result<std::string> big = dir.read("f", 4);
  REQUIRE_FALSE(big);
  CHECK(big.why() == tmp / "f" + " is larger than expected");
  CHECK_FALSE(dir.read("link"));
  Result<UniqueFd> fifo = dir.open_file("fifo");  // must not block
  REQUIRE_FALSE(fifo);
  CHECK(fifo.why() == tmp / "fifo" + " is not a regular file");
  CHECK_FALSE(dir.open_file("dir"));
  CHECK_FALSE(dir.open_file("missing"));
  CHECK_FALSE(dir.read("shared"));
  write_file(tmp / "empty", "");
  CHECK(*dir.read("empty") == "");
  // Larger than one read returns, and than any buffer: read whole.
  std::string large;
  for (int i = 0; large.size() < (300u << 10); ++i) large += std::to_string(i) + "\n";
  write_file(tmp / "large", large);
  Result<std::string> whole = dir.read("large");
  REQUIRE(whole);
  CHECK(*whole == large);
  CHECK_FALSE(dir.read("large", large.size() - 1));
  // A file that says it is empty and is not (/proc): read on to its end,
  // the limit checked as it grows.
  Result<TrustedDir> proc = TrustedDir::open("/proc/self", false);
  REQUIRE(proc);
  Result<std::string> status = proc->read("status");
  REQUIRE(status);
  CHECK(status->find("\nPid:\t" + std::to_string(::getpid()) + "\n") != std::string::npos);
  Result<std::string> cut = proc->read("status", 10);
  REQUIRE_FALSE(cut);
  CHECK(cut.why() == "/proc/self/status is larger than expected");
}

TEST_CASE("create_file never opens an existing file or a link", "[unit][trusted_dir]") {
  TempDir tmp;
  write_file(tmp / "target", "keep");
  fs::create_symlink(tmp / "target", tmp / "link");
  fs::create_symlink(tmp / "nowhere", tmp / "dangling");
  TrustedDir dir = open_dir(tmp.str());
  CHECK_FALSE(dir.create_file("target", 0644));
  CHECK_FALSE(dir.create_file("link", 0644));
  CHECK_FALSE(dir.create_file("dangling", 0644));
  CHECK_FALSE(fs::exists(tmp / "nowhere"));
  CHECK(read_file(tmp / "target") == "keep");
  Result<UniqueFd> fd = dir.create_file("new", 0600);
  REQUIRE(fd);
  CHECK(write_all(fd->get(), "abc", "new"));
  CHECK(read_file(tmp / "new") == "abc");
  CHECK((fs::status(tmp / "new").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("write_atomically replaces a file whole, a link by a file, and leaves no temporary",
          "[unit][trusted_dir]") {
  TempDir tmp;
  write_file(tmp / "target", "keep");
  fs::create_symlink(tmp / "target", tmp / "link");
  TrustedDir dir = open_dir(tmp.str());
  REQUIRE(dir.write_atomically("f", "one"));
  REQUIRE(dir.write_atomically("f", "two"));
  CHECK(read_file(tmp / "f") == "two");
  REQUIRE(dir.write_atomically("link", "new"));
  CHECK(fs::is_regular_file(fs::symlink_status(tmp / "link")));
  CHECK(read_file(tmp / "target") == "keep");
  fs::create_directory(tmp / "d");
  write_file(tmp / "d/inside", "x");
  CHECK_FALSE(dir.write_atomically("d", "over a directory"));
  CHECK(fs::is_directory(tmp / "d"));
  std::vector<std::string> names = dir.list();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"d", "f", "link", "target"});
}

TEST_CASE("rename, remove_file and remove_tree: links are removed, never followed",
          "[unit][trusted_dir]") {
  TempDir tmp;
  fs::create_directories(tmp / "tree/sub/deeper");
  write_file(tmp / "tree/sub/deeper/f", "x");
  fs::create_directory(tmp / "outside");
  write_file(tmp / "outside/keep", "keep");
  fs::create_directory_symlink(tmp / "outside", tmp / "tree/sub/link");
  fs::create_directory(tmp / "to");
  write_file(tmp / "a", "a");
  TrustedDir dir = open_dir(tmp.str());
  TrustedDir to = open_dir(tmp / "to");

  REQUIRE(dir.remove_tree("tree"));
  CHECK_FALSE(fs::exists(tmp / "tree"));
  CHECK(read_file(tmp / "outside/keep") == "keep");
  CHECK(dir.remove_tree("missing"));
  CHECK(dir.remove_file("missing"));

  REQUIRE(dir.rename("a", "b"));
  CHECK(read_file(tmp / "b") == "a");
  REQUIRE(dir.rename("b", to, "c"));
  CHECK(read_file(tmp / "to/c") == "a");
  Status gone = dir.rename("b", "d");
  REQUIRE_FALSE(gone);
  CHECK(gone.why().find("cannot rename " + tmp / "b") == 0);

  fs::create_directory_symlink(tmp / "outside", tmp / "dirlink");
  REQUIRE(dir.remove_file("dirlink"));
  CHECK(fs::exists(tmp / "outside/keep"));
  CHECK_FALSE(dir.remove_file("outside"));  // a directory is not a file
}

TEST_CASE("exists and status describe the entry itself; touch sets its time to now",
          "[unit][trusted_dir]") {
  TempDir tmp;
  fs::create_symlink(tmp / "nowhere", tmp / "dangling");
  write_file(tmp / "f", "x");
  fs::last_write_time(tmp / "f", fs::file_time_type::clock::now() - std::chrono::hours(48));
  TrustedDir dir = open_dir(tmp.str());
  CHECK(dir.exists("dangling"));
  REQUIRE(dir.status("dangling"));
  CHECK(S_ISLNK(dir.status("dangling")->st_mode));
  CHECK_FALSE(dir.exists("missing"));
  auto before = fs::last_write_time(tmp / "f");
  dir.touch("f");
  CHECK(fs::last_write_time(tmp / "f") > before + std::chrono::hours(47));
}

TEST_CASE("DirLock holds an exclusive lock; refuses a lock file that is a link",
          "[unit][trusted_dir]") {
  TempDir tmp;
  TrustedDir dir = open_dir(tmp.str());
  {
    DirLock lock(dir, "lock");
    REQUIRE(lock.held());
    int other = ::open((tmp / "lock").c_str(), O_RDONLY);
    REQUIRE(other >= 0);
    CHECK(::flock(other, LOCK_EX | LOCK_NB) != 0);  // held by `lock`
    ::close(other);
  }
  int after = ::open((tmp / "lock").c_str(), O_RDONLY);
  CHECK(::flock(after, LOCK_EX | LOCK_NB) == 0);  // released with the object
  ::close(after);

  write_file(tmp / "target", "");
  fs::create_symlink(tmp / "target", tmp / "linked");
  CHECK_FALSE(DirLock(dir, "linked").held());
  write_file(tmp / "open", "");
  ::chmod((tmp / "open").c_str(), 0666);
  CHECK_FALSE(DirLock(dir, "open").held());
}

TEST_CASE("UniqueFd closes once and hands its descriptor over on move", "[unit][trusted_dir]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[1]);
  UniqueFd a(fds[0]);
  UniqueFd b(std::move(a));
  CHECK_FALSE(a.valid());
  CHECK(b.get() == fds[0]);
  UniqueFd c;
  c = std::move(b);
  CHECK(c.get() == fds[0]);
  int raw = c.release();
  CHECK_FALSE(c.valid());
  CHECK(::fcntl(raw, F_GETFD) >= 0);  // release does not close
  UniqueFd d(raw);
  d.reset();
  CHECK(::fcntl(raw, F_GETFD) < 0);
}
