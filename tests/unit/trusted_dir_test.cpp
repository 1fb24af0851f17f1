// TrustedDir: every open relative to an opened directory, no link followed,
// every directory and file checked for its owner and mode as it is opened.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/fake_file_system.hpp"
#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "util/trusted_dir.hpp"

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

// AtomicOutput: a private, locked work directory beside the output; the
// result renamed over the output whole, or nothing changed at all.
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

// cache_root and open_cache_root: where the cache is, and adopting only a
// directory that is kbuild's (marked, or empty, or kbuild's own layout).
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

// Trust of device files and the programs they name: refused when someone
// other than the user or root could have written them or their directory.
namespace fs = std::filesystem;

namespace {

void chmod_or_fail(const std::string& path, mode_t mode) {
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

}  // namespace

TEST_CASE("check_trusted: the problem, the fix and the override", "[unit][trust]") {
  TempDir tmp;
  write_file(tmp / "ok.json", "{}");
  CHECK(check_trusted(tmp / "ok.json", "device file"));
  CHECK(check_trusted(tmp / "missing.json", "device file"));  // the caller says why

  write_file(tmp / "open.json", "{}");
  chmod_or_fail(tmp / "open.json", 0666);
  auto open = check_trusted(tmp / "open.json", "device file");
  REQUIRE_FALSE(open);
  CHECK(open.why() == "device file " + tmp / "open.json" +
                          " is world-writable (mode 0666); refusing to use it: run chmod o-w " +
                          tmp / "open.json" +
                          ", or pass --allow-untrusted-device-files if you trust it");

  write_file(tmp / "theirs.json", "{}");
  REQUIRE(::chown((tmp / "theirs.json").c_str(), ::geteuid() + 4242, 0) == 0);
  auto theirs = check_trusted(tmp / "theirs.json", "device file");
  REQUIRE_FALSE(theirs);
  CHECK(theirs.why().find("is owned by uid " + std::to_string(::geteuid() + 4242)) !=
        std::string::npos);
  CHECK(theirs.why().find("refusing to use it: chown it") != std::string::npos);

  write_file(tmp / "group.json", "{}");
  REQUIRE(::chown((tmp / "group.json").c_str(), ::geteuid(), 4242424) == 0);
  chmod_or_fail(tmp / "group.json", 0664);
  auto group = check_trusted(tmp / "group.json", "device file");
  REQUIRE_FALSE(group);
  CHECK(group.why().find("run chmod g-w") != std::string::npos);
}

TEST_CASE("check_trusted_file: a file in a directory others can write is refused",
          "[unit][trust]") {
  TempDir tmp;
  fs::create_directory(tmp / "shared");
  write_file(tmp / "shared/acc.json", "{}");
  chmod_or_fail(tmp / "shared", 0777);
  auto reason = check_trusted_file(tmp / "shared/acc.json", "device file");
  REQUIRE_FALSE(reason);
  CHECK(reason.why() ==
        "device file " + tmp / "shared/acc.json" + " is in " + tmp / "shared" +
            ", which is world-writable (mode 0777); refusing to use it: move it to a "
            "directory only you can write, or pass --allow-untrusted-device-files if "
            "you trust it");
  // The sticky bit does not make the file's own directory safe.
  chmod_or_fail(tmp / "shared", 01777);
  CHECK_FALSE(check_trusted_file(tmp / "shared/acc.json", "device file"));
  chmod_or_fail(tmp / "shared", 0755);
  CHECK(check_trusted_file(tmp / "shared/acc.json", "device file"));
}

TEST_CASE("a link is judged by where it leads, every directory up from there", "[unit][trust]") {
  TempDir tmp;
  fs::create_directories(tmp / "open/inner");
  write_file(tmp / "open/inner/acc.json", "{}");
  chmod_or_fail(tmp / "open", 0777);  // above the file's own directory, no sticky bit
  fs::create_directory(tmp / "mine");
  fs::create_symlink(tmp / "open/inner/acc.json", tmp / "mine/acc.json");
  auto reason = check_trusted_file(tmp / "mine/acc.json", "device file");
  REQUIRE_FALSE(reason);
  CHECK(reason.why().find("device file " + tmp / "mine/acc.json" + " is in " + tmp / "open") == 0);

  // A shared directory with the sticky bit higher up (as /tmp) is fine.
  chmod_or_fail(tmp / "open", 01777);
  CHECK(check_trusted_file(tmp / "mine/acc.json", "device file"));
}

TEST_CASE("check_trusted_opened_file checks the file opened, not its name now", "[unit][trust]") {
  TempDir tmp;
  write_file(tmp / "acc.json", "{}");
  int fd = ::open((tmp / "acc.json").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(check_trusted_opened_file(fd, tmp / "acc.json", "acc.json", "device file"));
  chmod_or_fail(tmp / "acc.json", 0646);
  auto reason = check_trusted_opened_file(fd, tmp / "acc.json", "acc.json", "device file");
  REQUIRE_FALSE(reason);
  CHECK(reason.why().find("device file acc.json is world-writable (mode 0646)") == 0);
  ::close(fd);
}

// The trust rule asks the file system it is given (issue 44: trust code
// through the seam): owners, modes and ACLs set by hand on an in-memory
// tree, no other user and no setfacl needed.
TEST_CASE("check_trusted_file: the rule on a fake tree (owner, mode, ACL, a link's real path)",
          "[unit][trusted_dir]") {
  kbuild_test::FakeFileSystem files;
  const uid_t me = ::geteuid(), stranger = me + 4242;
  files.write("/home/me/devices/npu.json", "{}");
  files.set_mode("/home/me/devices", 0755);
  CHECK(check_trusted_file("/home/me/devices/npu.json", "device file", files));

  SECTION("owned by another user") {
    files.set_owner("/home/me/devices/npu.json", stranger, 0);
    Status s = check_trusted_file("/home/me/devices/npu.json", "device file", files);
    REQUIRE_FALSE(s);
    CHECK(s.why().find("is owned by uid " + std::to_string(stranger)) != std::string::npos);
    CHECK(s.why().find("chown it") != std::string::npos);
  }
  SECTION("world-writable itself: the fix offered is for that") {
    files.set_mode("/home/me/devices/npu.json", 0666);
    Status s = check_trusted_file("/home/me/devices/npu.json", "device file", files);
    REQUIRE_FALSE(s);
    CHECK(s.why().find("run chmod o-w /home/me/devices/npu.json") != std::string::npos);
  }
  SECTION("its directory world-writable") {
    files.set_mode("/home/me/devices", 0777);
    Status s = check_trusted_file("/home/me/devices/npu.json", "device file", files);
    REQUIRE_FALSE(s);
    CHECK(s.why().find("is in /home/me/devices, which is world-writable") != std::string::npos);
  }
  SECTION("an ACL lets another user write it") {
    files.set_attribute("/home/me/devices/npu.json", "system.posix_acl_access",
                        trusted_dir_test_acl({{0x01, 06, 0},
                                              {0x02, 06, static_cast<std::uint32_t>(stranger)},
                                              {0x04, 04, 0},
                                              {0x10, 06, 0},
                                              {0x20, 04, 0}}));
    Status s = check_trusted_file("/home/me/devices/npu.json", "device file", files);
    REQUIRE_FALSE(s);
    CHECK(s.why().find("has an ACL that lets uid " + std::to_string(stranger) + " write it") !=
          std::string::npos);
    CHECK(s.why().find("run setfacl -b /home/me/devices/npu.json") != std::string::npos);
  }
  SECTION("reached through a link into a directory another user owns") {
    files.write("/srv/shared/npu.json", "{}");
    files.set_owner("/srv/shared", stranger, 0);
    files.symlink("/home/me/devices/link.json", "/srv/shared/npu.json");
    Status s = check_trusted_file("/home/me/devices/link.json", "device file", files);
    REQUIRE_FALSE(s);
    CHECK(s.why().find("is in /srv/shared, which is owned by uid") != std::string::npos);
  }
  SECTION("a shared sticky directory higher up (/tmp) is fine; without the bit it is not") {
    files.write("/tmp/me/devices/npu.json", "{}");
    files.set_mode("/tmp", 01777);
    files.set_owner("/tmp", 0, 0);
    CHECK(check_trusted_real_path("/tmp/me/devices/npu.json", "npu.json", "device file", files));
    files.set_mode("/tmp", 0777);
    CHECK_FALSE(
        check_trusted_real_path("/tmp/me/devices/npu.json", "npu.json", "device file", files));
  }
}
