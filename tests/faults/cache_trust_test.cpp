// Hostile users and a damaged cache: kbuild never hands back a binary it did
// not build for these inputs, never follows a link inside its cache, never
// clears what is not its own, and never copies a mode from the cache.
// Destructive cases run in a private mount namespace (root) or a scratch dir.
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

struct Cached {
  TempDir home, dir;
  std::string cache = home / ".cache/kbuild";
  Cached() { kernel(7); }
  void kernel(int value) {
    write_file(dir / "k.cpp", "extern \"C\" int f() { return " + std::to_string(value) + "; }\n");
  }
  RunResult build(std::vector<std::string> extra = {}, std::map<std::string, std::string> env = {},
                  const std::string& out = "k.so") {
    std::vector<std::string> args{"--no-torch", dir / "k.cpp", "-o", dir / out, "-v"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kbuild(args, home.str(), std::move(env));
  }
  // The cache entries' directories.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(cache + "/objects", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->path().filename() == "output") out.push_back(it->path().parent_path());
    return out;
  }
};

bool hit(const RunResult& r) {
  return r.err.find("kbuild: info: cache: hit") != std::string::npos;
}

bool is_root() {
  return ::geteuid() == 0;
}

// Runs `script` with /bin/sh in a private mount namespace (root only).
RunResult in_private_mounts(const std::string& script,
                            const std::map<std::string, std::string>& set,
                            const std::vector<std::string>& unset) {
  return run({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script},
             set, unset);
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("with no cache root, cache clear exits 2 and removes nothing (private /tmp)",
          "[faults][cache]") {
  if (!is_root()) {
    WARN("needs root for a private mount namespace: skipped");
    return;
  }
  // Today's kbuild with no root: the cache is "" and clear removed "/tmp".
  RunResult r = in_private_mounts(
      // kbuild itself may live under /tmp: a copy on a private tmpfs at /mnt first.
      "mount -t tmpfs kbuild-bin /mnt && cp \"$KBUILD\" /mnt/kbuild && "
      "mount -t tmpfs kbuild-test /tmp && touch /tmp/canary && /mnt/kbuild cache clear; "
      "echo \"exit=$?\"; /mnt/kbuild cache stats; echo \"stats=$?\"; ls /tmp",
      {{"KBUILD", kbuild_binary()}}, {"HOME", "KBUILD_CACHE_DIR", "XDG_CACHE_HOME"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("exit=2") != std::string::npos);
  CHECK(r.out.find("stats=2") != std::string::npos);
  CHECK(r.out.find("canary") != std::string::npos);
  CHECK(r.err.find("no cache directory") != std::string::npos);
}

TEST_CASE("with no cache root a build runs uncached with one note, and --pch makes no /pch",
          "[faults][cache]") {
  Cached c;
  write_file(c.dir / "pre.h", "#define P 1\n");
  const bool had_pch = fs::exists("/pch");
  RunResult r = run({kbuild_binary(), "--no-torch", c.dir / "k.cpp", "-o", c.dir / "k.so", "--pch",
                     c.dir / "pre.h", "-v"},
                    {}, {"HOME", "KBUILD_CACHE_DIR", "XDG_CACHE_HOME"});
  INFO(r.err);
  if (!had_pch && fs::exists("/pch")) fs::remove_all("/pch");  // today's kbuild made it
  CHECK(r.exit_code == 0);
  CHECK_FALSE((!had_pch && r.err.find("-include /pch/") != std::string::npos));
  CHECK(r.err.find("-include /pch/") == std::string::npos);
  std::size_t first = r.err.find("no cache directory");
  CHECK(first != std::string::npos);
  CHECK(r.err.find("no cache directory", first + 1) == std::string::npos);
  CHECK(r.err.find("kbuild: info: cache: off") != std::string::npos);
  CHECK(call_f(c.dir / "k.so") == 7);
}

TEST_CASE(
    "a new cache directory is marked; an unmarked one holding other files is not used "
    "or cleared",
    "[faults][cache]") {
  Cached c;
  REQUIRE(c.build().exit_code == 0);
  CHECK(read_file(c.cache + "/CACHEDIR.TAG")
            .rfind("Signature: 8a477f597d28d172789f06886806bc55", 0) == 0);

  TempDir theirs;
  write_file(theirs / "tmp/notes.txt", "mine\n");
  write_file(theirs / "objects/keep.txt", "mine too\n");
  std::map<std::string, std::string> env{{"KBUILD_CACHE_DIR", theirs.str()}};
  RunResult built = c.build({}, env);
  INFO(built.err);
  CHECK(built.exit_code == 0);
  CHECK(built.err.find("is not kbuild's") != std::string::npos);
  CHECK(built.err.find("kbuild: warning:") != std::string::npos);
  RunResult cleared = run_kbuild({"cache", "clear"}, c.home.str(), env);
  INFO(cleared.err);
  CHECK(cleared.exit_code == 2);
  CHECK(read_file(theirs / "tmp/notes.txt") == "mine\n");
  CHECK(read_file(theirs / "objects/keep.txt") == "mine too\n");
  CHECK_FALSE(fs::exists(theirs / "CACHEDIR.TAG"));

  // kbuild's own cache: clear removes its entries and keeps the marker.
  RunResult own = run_kbuild({"cache", "clear"}, c.home.str());
  CHECK(own.exit_code == 0);
  CHECK(c.entries().empty());
  CHECK(fs::exists(c.cache + "/CACHEDIR.TAG"));
}

TEST_CASE("a world-writable cache directory is not used: one warning, the build is right",
          "[faults][cache]") {
  Cached c;
  REQUIRE(c.build().exit_code == 0);
  fs::permissions(c.cache, fs::perms::all);  // 0777
  c.kernel(8);
  RunResult r = c.build();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("kbuild: warning: cache directory") != std::string::npos);
  CHECK(r.err.find("world-writable") != std::string::npos);
  CHECK(r.err.find("kbuild: info: cache: off") != std::string::npos);
  CHECK(call_f(c.dir / "k.so") == 8);
}

TEST_CASE("an entry replaced by another user is never served", "[faults][cache]") {
  if (!is_root()) {
    WARN("needs root to give a file to another user: skipped");
    return;
  }
  Cached c;
  REQUIRE(c.build().exit_code == 0);
  REQUIRE(c.entries().size() == 1);
  // The other user's library, put where the entry's output was.
  compile_shared_library("extern \"C\" int f() { return 666; }\n", c.dir / "evil.so");
  const std::string output = (c.entries()[0] / "output").string();
  fs::copy_file(c.dir / "evil.so", output, fs::copy_options::overwrite_existing);
  REQUIRE(::chown(output.c_str(), 65534, 65534) == 0);
  fs::remove(c.dir / "k.so");
  RunResult r = c.build();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(hit(r));
  CHECK(call_f(c.dir / "k.so") == 7);
}

TEST_CASE("a hit gets the mode a build gives, never the entry's (setuid included)",
          "[faults][cache]") {
  Cached c;
  REQUIRE(c.build().exit_code == 0);
  const mode_t built = mode_of(c.dir / "k.so");
  CHECK(built == (0777 & ~static_cast<mode_t>(022)));  // the harness's umask is 022
  REQUIRE(c.entries().size() == 1);
  fs::permissions(c.entries()[0] / "output", static_cast<fs::perms>(04755));
  fs::remove(c.dir / "k.so");
  RunResult r = c.build();
  CHECK(hit(r));
  CHECK(mode_of(c.dir / "k.so") == built);
  // Objects as well: 0666 less the umask.
  RunResult o1 = c.build({"-c"}, {}, "k.o");
  const mode_t object = mode_of(c.dir / "k.o");
  CHECK(object == 0644);
  fs::remove(c.dir / "k.o");
  RunResult o2 = c.build({"-c"}, {}, "k.o");
  CHECK(hit(o2));
  CHECK(mode_of(c.dir / "k.o") == object);
}

TEST_CASE("links planted in the cache are never followed", "[faults][cache]") {
  Cached c;
  REQUIRE(c.build().exit_code == 0);
  TempDir outside;
  // stats.lock -> a file elsewhere: kbuild must not create or write it.
  fs::remove(c.cache + "/stats.lock");
  fs::create_symlink(outside / "victim", c.cache + "/stats.lock");
  // objects -> a directory elsewhere holding entry-like directories:
  // eviction must not delete them.
  write_file(outside / "tree/ab/abcdef/output", std::string(4096, 'x'));
  write_file(outside / "tree/ab/abcdef/keep", "keep\n");
  fs::rename(c.cache + "/objects", c.cache + "/objects.real");
  fs::create_symlink(outside / "tree", c.cache + "/objects");
  c.kernel(9);
  RunResult r = c.build({"--cache-max-size", "1"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(call_f(c.dir / "k.so") == 9);
  CHECK_FALSE(fs::exists(outside / "victim"));
  CHECK(read_file(outside / "tree/ab/abcdef/keep") == "keep\n");
  CHECK(fs::exists(outside / "tree/ab/abcdef/output"));
}

TEST_CASE("a discovery cache entry others can write is not believed", "[faults][cache]") {
  if (!fs::exists("/usr/bin/python3")) {
    WARN("python3 not installed: skipped");
    return;
  }
  Cached c;
  const std::vector<std::string> args{"--device",  "cpu",           "--python", "/usr/bin/python3",
                                      "--dry-run", c.dir / "k.cpp", "-o",       c.dir / "k.so"};
  RunResult first = run_kbuild(args, c.home.str());
  REQUIRE(fs::exists(c.cache + "/discovery"));
  // The attacker's tree, and every discovery entry rewritten to point at it.
  TempDir attacker;
  make_fake_torch(attacker / "torch", true);
  for (auto& e : fs::directory_iterator(c.cache + "/discovery")) {
    // (The parsed-file entries, *.bin, name no torch; unit tests cover them.)
    if (e.path().extension() == ".cbor") {
      nlohmann::json entry = nlohmann::json::from_cbor(read_file(e.path()));
      entry["answer"]["torch_root"] = attacker / "torch";
      std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(entry);
      write_file(e.path(), std::string(cbor.begin(), cbor.end()));
    }
    fs::permissions(e.path(), fs::perms::all);  // world-writable, as a shared cache would be
  }
  RunResult r = run_kbuild(args, c.home.str());
  INFO(first.out << r.out << r.err);
  CHECK(r.out.find(attacker.str()) == std::string::npos);
}

TEST_CASE("a cache hit never writes through a link swapped in beside the output",
          "[faults][cache]") {
  Cached c;
  REQUIRE(c.build().exit_code == 0);
  TempDir outside;
  write_file(outside / "k.so", "precious\n");
  std::atomic<bool> done{false};
  std::atomic<int> swaps{0};
  // Another user of a shared output directory, swapping links in for
  // whatever kbuild makes there (a file once, a directory now).
  std::thread attacker([&] {
    int n = 0;
    while (!done) {
      std::error_code ec;
      for (fs::directory_iterator it(c.dir.path(), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(".k.so.kbuild-", 0) != 0 || fs::is_symlink(it->path(), ec)) continue;
        if (fs::is_directory(it->path(), ec)) {
          fs::rename(it->path(), c.dir / ("stolen." + std::to_string(++n)), ec);
          if (!ec) fs::create_directory_symlink(outside.path(), it->path(), ec);
        } else {
          fs::remove(it->path(), ec);
          fs::create_symlink(outside / "k.so", it->path(), ec);
        }
        if (!ec) ++swaps;
      }
    }
  });
  for (int i = 0; i < 30; ++i) c.build();
  done = true;
  attacker.join();
  INFO("swaps: " << swaps);
  CHECK(read_file(outside / "k.so") == "precious\n");
}

TEST_CASE("a live build's work directory is kept whatever its pid says; a dead one's goes",
          "[faults][cache]") {
  Cached c;
  // A build in another PID namespace: its pid means nothing here, but it
  // holds its lock. (An older kbuild's temporary was a file; this one too.)
  const std::string live_dir = c.dir / ".k.so.kbuild-tmp.999999.1";
  const std::string live_file = c.dir / ".k.so.kbuild-tmp.999999.2";
  const std::string dead_dir = c.dir / ".k.so.kbuild-tmp.999999.3";
  fs::create_directory(live_dir);
  write_file(live_dir + "/k.so", "being written\n");
  write_file(live_file, "being written\n");
  fs::create_directory(dead_dir);
  int dir_fd = ::open(live_dir.c_str(), O_RDONLY | O_DIRECTORY);
  int file_fd = ::open(live_file.c_str(), O_RDONLY);
  REQUIRE(::flock(dir_fd, LOCK_EX) == 0);
  REQUIRE(::flock(file_fd, LOCK_EX) == 0);
  RunResult r = c.build({"--no-cache"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_file(live_dir + "/k.so") == "being written\n");
  CHECK(read_file(live_file) == "being written\n");
  CHECK_FALSE(fs::exists(dead_dir));
  ::close(dir_fd);
  ::close(file_fd);
  // Its lock gone, the next build removes it.
  CHECK(c.build({"--no-cache"}).exit_code == 0);
  CHECK_FALSE(fs::exists(live_dir));
  CHECK_FALSE(fs::exists(live_file));
}
