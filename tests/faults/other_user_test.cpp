// A second local user against root's builds: what kbuild runs or reads
// flags from (Inductor profiles, device files, exec programs, the cache)
// must not be writable by them, ACLs included, and --compile-commands must
// not let their links or locks steer root's writes. The other user is a
// scratch uid (setpriv) acting in a scratch directory.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

constexpr const char* kOtherUid = "65534";

bool other_user_test_is_root() {
  return ::geteuid() == 0;
}

bool other_user_test_has_setfacl() {
  return ::access("/usr/bin/setfacl", X_OK) == 0 || ::access("/bin/setfacl", X_OK) == 0;
}

// Runs `script` with /bin/sh as the scratch user (uid and gid 65534, no
// other groups).
RunResult as_other_user(const std::string& script) {
  return run({"/usr/bin/setpriv", std::string("--reuid=") + kOtherUid,
              std::string("--regid=") + kOtherUid, "--clear-groups", "/bin/sh", "-c", script});
}

void other_user_test_setfacl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/setfacl"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

// A data dir with the shipped profiles, as a shared install has them.
std::string shared_data_dir(const TempDir& dir) {
  fs::create_directories(dir / "data/profiles");
  for (const auto& entry : fs::directory_iterator(source_root() + "/configs/profiles"))
    fs::copy_file(entry.path(), dir / ("data/profiles/" + entry.path().filename().string()));
  return dir / "data";
}

const std::string kOtherKernel = "extern \"C\" int f() { return 1; }\n";

}  // namespace

TEST_CASE("a profile another user replaced through a writable profiles/ is refused",
          "[faults][other_user]") {
  if (!other_user_test_is_root()) {
    WARN("needs root to act as a second user (setpriv): skipped");
    return;
  }
  TempDir home, dir;
  write_file(dir / "k.cpp", kOtherKernel);
  const std::string data = shared_data_dir(dir);
  // A shared install whose profiles/ the other user can write.
  fs::permissions(data + "/profiles", fs::perms(0777));
  RunResult replaced = as_other_user(
      "cd " + data +
      "/profiles && sed 's|\"fno-trapping-math\",|\"fno-trapping-math\", \"B/their/dir/\",|' "
      "2.11.json > new && "
      "mv -f new 2.11.json && grep -c /their/dir/ 2.11.json");
  INFO(replaced.out << replaced.err);
  REQUIRE(replaced.exit_code == 0);
  const std::map<std::string, std::string> env{{"KBUILD_DATA_DIR", data}};
  RunResult r =
      run_kbuild({"--no-torch", "--dry-run", dir / "k.cpp", "-o", dir / "k.so"}, home.str(), env);
  INFO(r.out << r.err);
  CHECK(r.out.find("-B/their/dir/") == std::string::npos);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("Inductor profile " + data + "/profiles/2.11.json") != std::string::npos);
  // Fixed (the directory no longer writable by others), the file itself is
  // still theirs.
  fs::permissions(data + "/profiles", fs::perms(0755));
  r = run_kbuild({"--no-torch", "--dry-run", dir / "k.cpp", "-o", dir / "k.so"}, home.str(), env);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("owned by uid 65534") != std::string::npos);
  // The override trusts it, as it does device files.
  r = run_kbuild({"--no-torch", "--dry-run", "--allow-untrusted-device-files", dir / "k.cpp", "-o",
                  dir / "k.so"},
                 home.str(), env);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("-B/their/dir/") != std::string::npos);
}

TEST_CASE("every profile of an extends chain is checked, on a remembered parse too",
          "[faults][other_user]") {
  if (!other_user_test_is_root()) {
    WARN("needs root to give a file to another user: skipped");
    return;
  }
  TempDir home, dir;
  write_file(dir / "k.cpp", kOtherKernel);
  const std::string data = shared_data_dir(dir);
  const std::map<std::string, std::string> env{{"KBUILD_DATA_DIR", data}};
  const std::vector<std::string> args{
      "--no-torch", "--torch-version", "2.14", "--dry-run", dir / "k.cpp", "-o", dir / "k.so"};
  // First trusted: the parse is remembered in the cache.
  REQUIRE(run_kbuild(args, home.str(), env).exit_code == 0);
  // 2.14 extends 2.11, which is now another user's.
  REQUIRE(::chown((data + "/profiles/2.11.json").c_str(), 65534, 65534) == 0);
  RunResult r = run_kbuild(args, home.str(), env);
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find(data + "/profiles/2.11.json is owned by uid 65534") != std::string::npos);
}

TEST_CASE("an ACL that lets another user write is refused: device file, directory, program",
          "[faults][other_user]") {
  if (!other_user_test_is_root()) {
    WARN("needs root to act as a second user (setpriv): skipped");
    return;
  }
  if (!other_user_test_has_setfacl()) {
    WARN("setfacl not installed (Debian package acl; scripts/setup installs it): skipped");
    return;
  }
  TempDir home, dir;
  write_file(dir / "k.cpp", kOtherKernel);
  write_file(dir / "dev.json", "{\"device\": \"x\", \"definitions\": [\"THEIRS\"]}");
  fs::permissions(dir / "dev.json", fs::perms(0644));
  // mode 0664 on a file of root's private group: trusted by the mode bits.
  other_user_test_setfacl({"-m", std::string("u:") + kOtherUid + ":rw", dir / "dev.json"});
  // The other user can indeed write it.
  REQUIRE(as_other_user("echo '{\"device\": \"x\"}' > " + dir / "dev.json").exit_code == 0);
  const std::vector<std::string> build{"--no-torch",  "--config", dir / "dev.json",
                                       "--device",    "x",        "--dry-run",
                                       dir / "k.cpp", "-o",       dir / "k.so"};
  RunResult r = run_kbuild(build, home.str());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("has an ACL that lets uid 65534 write it") != std::string::npos);
  CHECK(r.err.find("setfacl -b " + dir / "dev.json") != std::string::npos);
  std::vector<std::string> allowed = build;
  allowed.insert(allowed.begin(), "--allow-untrusted-device-files");
  CHECK(run_kbuild(allowed, home.str()).exit_code == 0);

  // A directory of device files with a default ACL: what is made in it is theirs to write.
  other_user_test_setfacl({"-b", dir / "dev.json"});
  fs::create_directory(dir / "devices");
  other_user_test_setfacl({"-d", "-m", std::string("u:") + kOtherUid + ":rwx", dir / "devices"});
  r = run_kbuild({"--no-torch", "--dry-run", dir / "k.cpp", "-o", dir / "k.so"}, home.str(),
                 {{"KBUILD_CONFIG_PATH", dir / "devices"}});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("has a default ACL that lets uid 65534 write what is created in it") !=
        std::string::npos);

  // An exec provider's program.
  write_file(dir / "provider.sh", "#!/bin/sh\necho '{}'\n", true);
  write_file(dir / "ext.json",
             "{\"device\": \"ext\", \"exec\": {\"command\": [\"./provider.sh\"]}}");
  other_user_test_setfacl({"-m", std::string("u:") + kOtherUid + ":rwx", dir / "provider.sh"});
  r = run_kbuild({"--no-torch", "--config", dir / "ext.json", "--device", "ext", "--dry-run",
                  dir / "k.cpp", "-o", dir / "k.so"},
                 home.str());
  CHECK(r.exit_code == 3);
  CHECK(r.err.find(dir / "provider.sh") != std::string::npos);
  CHECK(r.err.find("has an ACL that lets uid 65534 write it") != std::string::npos);
}

TEST_CASE("a profiles directory or cache root with another user's ACL is refused",
          "[faults][other_user]") {
  if (!other_user_test_is_root() || !other_user_test_has_setfacl()) {
    WARN("needs root and setfacl (Debian package acl): skipped");
    return;
  }
  TempDir home, dir;
  write_file(dir / "k.cpp", kOtherKernel);
  const std::string data = shared_data_dir(dir);
  other_user_test_setfacl({"-m", std::string("u:") + kOtherUid + ":rwx", data + "/profiles"});
  RunResult r = run_kbuild({"--no-torch", "--dry-run", dir / "k.cpp", "-o", dir / "k.so"},
                           home.str(), {{"KBUILD_DATA_DIR", data}});
  INFO(r.err);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("is in " + data + "/profiles, which has an ACL that lets uid 65534") !=
        std::string::npos);

  // The cache root: not used (the build runs uncached, with why).
  fs::create_directories(dir / "cache");
  other_user_test_setfacl({"-m", std::string("u:") + kOtherUid + ":rwx", dir / "cache"});
  r = run_kbuild({"--no-torch", dir / "k.cpp", "-o", dir / "k.so", "-v"}, home.str(),
                 {{"KBUILD_CACHE_DIR", dir / "cache"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("has an ACL that lets uid 65534 write it") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "cache/objects"));
}

TEST_CASE("--compile-commands never follows another user's link in a sticky directory",
          "[faults][other_user]") {
  if (!other_user_test_is_root()) {
    WARN("needs root to act as a second user (setpriv): skipped");
    return;
  }
  TempDir home, dir;
  write_file(dir / "k.cpp", kOtherKernel);
  fs::create_directories(dir / "tmp");
  fs::permissions(dir / "tmp", fs::perms(01777));
  fs::create_directories(dir / "private");
  fs::permissions(dir / "private", fs::perms(0700));
  write_file(dir / "private/victim.json", "[]\n");
  // Their links: to a file in a directory they cannot read, and to the directory.
  REQUIRE(as_other_user("ln -s " + dir / "private/victim.json " + dir / "tmp/cc.json && ln -s " +
                        dir / "private " + dir / "tmp/d")
              .exit_code == 0);
  for (const std::string& database : {dir / "tmp/cc.json", dir / "tmp/d/victim.json"}) {
    RunResult r = run_kbuild({"--no-torch", "--dry-run", "--compile-commands", database,
                              dir / "k.cpp", "-o", dir / "k.so"},
                             home.str());
    INFO(database << ": " << r.err);
    CHECK(r.exit_code == 9);
    CHECK(r.err.find("symlink of uid 65534") != std::string::npos);
    CHECK(r.err.find("protected_symlinks") != std::string::npos);
    CHECK(read_file(dir / "private/victim.json") == "[]\n");
    CHECK_FALSE(fs::exists(dir / "private/victim.json.lock"));
  }
  // root's own link there is followed, as the kernel would.
  fs::create_symlink(dir / "private/victim.json", dir / "tmp/mine.json");
  RunResult mine = run_kbuild({"--no-torch", "--dry-run", "--compile-commands",
                               dir / "tmp/mine.json", dir / "k.cpp", "-o", dir / "k.so"},
                              home.str());
  INFO(mine.err);
  CHECK(mine.exit_code == 0);
  CHECK(read_file(dir / "private/victim.json").find("k.cpp") != std::string::npos);
}

TEST_CASE(
    "--compile-commands: another user's lock is refused, a held one waited for until a "
    "deadline",
    "[faults][other_user]") {
  TempDir home, dir;
  write_file(dir / "k.cpp", kOtherKernel);
  const std::vector<std::string> args{"--no-torch",    "--dry-run",   "--compile-commands",
                                      dir / "cc.json", dir / "k.cpp", "-o",
                                      dir / "k.so"};
  if (other_user_test_is_root()) {
    fs::permissions(dir.path(), fs::perms(0777));
    REQUIRE(as_other_user("touch " + dir / "cc.json.lock").exit_code == 0);
    RunResult r = run_kbuild(args, home.str());
    INFO(r.err);
    CHECK(r.exit_code == 9);
    CHECK(r.err.find("lock " + dir / "cc.json.lock is owned by uid 65534") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "cc.json"));
    fs::remove(dir / "cc.json.lock");
    fs::permissions(dir.path(), fs::perms(0755));
  } else {
    WARN("needs root to act as a second user: the lock owner case is not run");
  }
  // A lock held by a process that never lets go (stopped, or hung).
  std::string fifo = never_fifo(dir / "never");
  BackgroundProcess holder(
      {"/usr/bin/flock", dir / "cc.json.lock", "/bin/sh", "-c", "echo holding; exec cat " + fifo},
      "holding");
  std::vector<std::string> bounded{"/usr/bin/timeout", "60", kbuild_binary()};
  bounded.insert(bounded.end(), args.begin(), args.end());
  std::map<std::string, std::string> set{{"KBUILD_COMPILE_COMMANDS_LOCK_TIMEOUT_MS", "300"}};
  std::vector<std::string> unset;
  make_hermetic(home.str(), set, unset);
  auto start = std::chrono::steady_clock::now();
  RunResult r = run(bounded, set, unset);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.err);
  CHECK(r.exit_code == 9);
  CHECK(r.err.find("for the lock " + dir / "cc.json.lock") != std::string::npos);
  CHECK(waited < 30);
  CHECK_FALSE(fs::exists(dir / "cc.json"));
}
