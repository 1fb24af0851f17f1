// The output cache with real g++: hits skip the compiler, and any change to
// a header, macro, flag or the compiler is a miss.
#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

struct CacheCase {
  TempDir home, dir;
  std::string cxx, count;
  CacheCase() : cxx(dir / "bin/counting-g++"), count(dir / "compiler-runs") {
    // A compiler that counts its compiles (not kbuild's questions about its
    // search dirs: -v on /dev/null, -print-search-dirs), then is g++.
    write_file(cxx,
               "#!/bin/sh\ncase \"$*\" in *-print-search-dirs*|*\"-E -v -x c++ /dev/null\"*) ;; "
               "*) echo run >> \"" +
                   count + "\";; esac\nexec /usr/bin/g++ \"$@\"\n",
               true);
    write_file(dir / "h.h", "#define VALUE 41\n");
    write_file(dir / "k.cpp", "#include \"h.h\"\nextern \"C\" int f() { return VALUE + X; }\n");
  }
  RunResult build(std::vector<std::string> extra = {}, const std::string& out = "k.so") {
    std::vector<std::string> args{"--no-torch", "--cxx", cxx,   dir / "k.cpp", "-o",
                                  dir / out,    "-D",    "X=1", "-v"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_kbuild(args, home.str());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r;
  }
  int runs() const {
    std::string text = read_file(count);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  static bool hit(const RunResult& r) {
    return r.err.find("kbuild: info: cache: hit") != std::string::npos;
  }
};

}  // namespace

TEST_CASE("the second identical build is a cache hit: same bytes, no compiler run",
          "[e2e][cache]") {
  CacheCase c;
  CHECK_FALSE(CacheCase::hit(c.build()));
  std::string first = read_file(c.dir / "k.so");
  fs::remove(c.dir / "k.so");
  CHECK(CacheCase::hit(c.build()));
  CHECK(c.runs() == 1);
  CHECK(read_file(c.dir / "k.so") == first);
  RunResult stats = run_kbuild({"cache", "stats"}, c.home.str());
  CHECK(stats.out.find("local hits       1\n") != std::string::npos);
  CHECK(stats.out.find("misses           1\n") != std::string::npos);
  CHECK(stats.out.find("uncacheable      0\n") != std::string::npos);
  CHECK(stats.out.find("entries          1\n") != std::string::npos);
}

TEST_CASE("cache stats --json: the counts after a build and a hit, and none before",
          "[e2e][cache]") {
  CacheCase c;
  RunResult before = run_kbuild({"cache", "stats", "--json"}, c.home.str());
  INFO(before.out << before.err);
  REQUIRE(before.exit_code == 0);
  const nlohmann::json none = nlohmann::json::parse(before.out);
  CHECK(none["exists"] == false);
  CHECK(none["directory"] == c.home / ".cache/kbuild");
  CHECK(none["entries"] == 0);
  CHECK_FALSE(fs::exists(c.home / ".cache/kbuild"));  // stats creates nothing
  c.build();
  fs::remove(c.dir / "k.so");
  REQUIRE(CacheCase::hit(c.build()));
  RunResult stats =
      run_kbuild({"cache", "stats", "--json", "--cache-max-size", "20M"}, c.home.str());
  INFO(stats.out << stats.err);
  REQUIRE(stats.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(stats.out);
  CHECK(j["exists"] == true);
  CHECK(j["directory"] == c.home / ".cache/kbuild");
  CHECK(j["entries"] == 1);
  CHECK(j["hits"] == 1);
  CHECK(j["misses"] == 1);
  CHECK(j["uncacheable"] == nlohmann::json{{"total", 0}, {"reasons", nlohmann::json::object()}});
  CHECK(j["bytes"].get<std::uint64_t>() >= fs::file_size(c.dir / "k.so"));
  CHECK(j["max_bytes"] == 20u << 20);
  CHECK(j["remote"] ==
        nlohmann::json{
            {"hits", 0}, {"misses", 0}, {"errors", 0}, {"bytes_down", 0}, {"bytes_up", 0}});
  // Only stats has it: never a setting silently ignored.
  RunResult clear = run_kbuild({"cache", "clear", "--json"}, c.home.str());
  CHECK(clear.exit_code == 2);
  CHECK(clear.err.find("--json is for kbuild cache stats, not clear") != std::string::npos);
  CHECK(CacheCase::hit(c.build()));  // nothing was cleared
}

TEST_CASE("changing a header, a macro, a flag or the compiler misses", "[e2e][cache]") {
  CacheCase c;
  c.build();
  write_file(c.dir / "h.h", "#define VALUE 42\n");  // a header the compiler read
  CHECK_FALSE(CacheCase::hit(c.build()));
  CHECK(CacheCase::hit(c.build()));
  CHECK_FALSE(CacheCase::hit(c.build({"-D", "Y=2"})));            // a macro
  CHECK_FALSE(CacheCase::hit(c.build({"--extra-flags", "-g"})));  // a flag
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(c.cxx, read_file(c.cxx) + "# changed\n", true);  // the compiler
  CHECK_FALSE(CacheCase::hit(c.build()));
  CHECK(c.runs() == 5);
}

TEST_CASE("a header touched but unchanged still hits; the source changing misses", "[e2e][cache]") {
  CacheCase c;
  c.build();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(c.dir / "h.h", "#define VALUE 41\n");  // same bytes, new mtime
  CHECK(CacheCase::hit(c.build()));
  write_file(c.dir / "k.cpp", "#include \"h.h\"\nextern \"C\" int f() { return VALUE - X; }\n");
  CHECK_FALSE(CacheCase::hit(c.build()));
}

TEST_CASE("shared-library links of objects are cached too; --no-cache always compiles",
          "[e2e][cache]") {
  CacheCase c;
  c.build({"-c"}, "k.o");
  RunResult link1 = run_kbuild(
      {"--no-torch", "--cxx", c.cxx, c.dir / "k.o", "-o", c.dir / "lib.so", "-v"}, c.home.str());
  RunResult link2 = run_kbuild(
      {"--no-torch", "--cxx", c.cxx, c.dir / "k.o", "-o", c.dir / "lib2.so", "-v"}, c.home.str());
  CHECK(link1.exit_code == 0);
  CHECK(link2.exit_code == 0);
  CHECK(link2.err.find("cache: hit") != std::string::npos);
  int before = c.runs();
  c.build({"--no-cache"});
  c.build({"--no-cache"});
  CHECK(c.runs() == before + 2);
}

TEST_CASE("parallel builds of one kernel all succeed and publish one whole entry", "[e2e][cache]") {
  CacheCase c;
  const std::string bin = kbuild_binary();
  const std::map<std::string, std::string> env{{"HOME", c.home.str()},
                                               {"XDG_CACHE_HOME", c.home / ".cache"}};
  std::vector<std::thread> threads;
  std::vector<int> codes(8, -1);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      std::string out = c.dir / "p";
      out += std::to_string(i);
      out += ".so";
      codes[i] =
          run({bin, "--no-torch", "--cxx", c.cxx, c.dir / "k.cpp", "-D", "X=1", "-o", out}, env)
              .exit_code;
    });
  for (auto& t : threads) t.join();
  for (int code : codes) CHECK(code == 0);
  for (int i = 1; i < 8; ++i) {
    std::string name = "p";
    name += std::to_string(i);
    name += ".so";
    CHECK(read_file(c.dir / name) == read_file(c.dir / "p0.so"));
  }
  RunResult stats = run_kbuild({"cache", "stats"}, c.home.str());
  CHECK(stats.out.find("entries          1\n") != std::string::npos);
  bool litter =
      fs::exists(c.home / ".cache/kbuild/tmp") && !fs::is_empty(c.home / ".cache/kbuild/tmp");
  CHECK_FALSE(litter);
}

TEST_CASE("the least recently used entries go when the cache is over its size", "[e2e][cache]") {
  CacheCase c;
  for (int i = 0; i < 4; ++i) {
    std::string macro = "V";
    macro += std::to_string(i);
    c.build({"-D", macro, "--cache-max-size", "20K"});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  RunResult stats = run_kbuild({"cache", "stats"}, c.home.str());
  CHECK(stats.out.find("entries          1\n") != std::string::npos);
  // The limit stats names (--cache-max-size) is one it takes, for stats only.
  RunResult limited = run_kbuild({"cache", "stats", "--cache-max-size", "20K"}, c.home.str());
  INFO(limited.err);
  CHECK(limited.exit_code == 0);
  CHECK(limited.out.find(" of 20.0 KiB (") != std::string::npos);
  RunResult clear = run_kbuild({"cache", "clear", "--cache-max-size", "20K"}, c.home.str());
  CHECK(clear.exit_code == 2);
  CHECK(clear.err.find("--cache-max-size is for kbuild cache stats") != std::string::npos);
  CHECK(CacheCase::hit(c.build({"-D", "V3"})));  // the newest stayed (clear refused)
  CHECK_FALSE(CacheCase::hit(c.build({"-D", "V0"})));
  RunResult bad =
      run_kbuild({"--no-torch", c.dir / "k.cpp", "--cache-max-size", "lots"}, c.home.str());
  CHECK(bad.exit_code == 2);
}

TEST_CASE("cache clear empties it", "[e2e][cache]") {
  CacheCase c;
  c.build();
  REQUIRE(run_kbuild({"cache", "clear"}, c.home.str()).exit_code == 0);
  CHECK(run_kbuild({"cache", "stats"}, c.home.str()).out.find("entries          0\n") !=
        std::string::npos);
  CHECK_FALSE(CacheCase::hit(c.build()));
}

// touch -d, cp -p, tar and rsync -t give a file an old mtime back: a header
// with other bytes of the same size under its old mtime is still a change
// (its inode change time moved). A stale hit before input rows kept it.
TEST_CASE("a header's other bytes under its old size and mtime miss", "[e2e][cache]") {
  CacheCase c;
  c.build();
  struct stat before {};
  REQUIRE(::stat((c.dir / "h.h").c_str(), &before) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(c.dir / "h.h", "#define VALUE 49\n");  // the same size
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, (c.dir / "h.h").c_str(), times, 0) == 0);
  fs::remove(c.dir / "k.so");
  CHECK_FALSE(CacheCase::hit(c.build()));
  CHECK(c.runs() == 2);
  CHECK(CacheCase::hit(c.build()));  // that version is kept now
}
