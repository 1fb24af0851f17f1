// The parsed-file cache (util/parsed_file_cache.hpp) over the fake file
// system: an entry answers while every file it was parsed from keeps its
// stamp, and misses once one's size, modification time, change time or
// inode moves; only settled files are remembered. The parsed files live in
// memory and time moves by hand; only the cache's own directory is real
// (it is a trusted directory, opened by descriptor).
#include "util/parsed_file_cache.hpp"

#include <catch2/catch.hpp>
#include <chrono>

#include "../support/fake_file_system.hpp"
#include "../support/test_support.hpp"
#include "util/trusted_dir.hpp"

using namespace kbuild;
using namespace kbuild_test;
using namespace std::chrono_literals;

namespace {

struct ParsedCacheFixture {
  TempDir tmp;
  FakeFileSystem files;
  ParsedFileCache cache = open_cache(tmp / "cache", files);

  static ParsedFileCache open_cache(const std::string& root, const FileSystem& files) {
    REQUIRE(open_cache_root(root, true));
    std::optional<ParsedFileCache> cache = ParsedFileCache::open(root, files);
    REQUIRE(cache);
    return std::move(*cache);
  }
  // Remembers "parsed" from `paths` as they are now.
  void remember(const std::vector<std::string>& paths) {
    std::optional<std::vector<StatedFile>> stated = stat_files(files, paths);
    REQUIRE(stated);
    cache.write("test", "key", *stated, "parsed");
  }
  bool hit() const { return cache.read("test", "key") == std::optional<std::string>("parsed"); }
};

}  // namespace

TEST_CASE("an entry answers while its files keep their stamps", "[unit][parsed_file_cache]") {
  ParsedCacheFixture f;
  f.files.write("/p/base.json", "{}");
  f.files.write("/p/line.json", "{\"extends\": \"base\"}");
  f.files.advance(2s);
  CHECK_FALSE(f.hit());
  f.remember({"/p/line.json", "/p/base.json"});
  CHECK(f.hit());
  f.files.advance(1h);  // time alone changes nothing
  CHECK(f.hit());
  CHECK_FALSE(f.cache.read("test", "other key"));
  CHECK_FALSE(f.cache.read("other kind", "key"));
}

TEST_CASE("a change to any file's size, mtime, ctime or inode makes the entry stale",
          "[unit][parsed_file_cache]") {
  ParsedCacheFixture f;
  f.files.write("/p/base.json", "{}");
  f.files.write("/p/line.json", "{}");
  const struct timespec written = f.files.now();
  f.files.advance(2s);
  f.remember({"/p/line.json", "/p/base.json"});
  REQUIRE(f.hit());

  SECTION("size and mtime: the parent file rewritten") {
    f.files.write("/p/base.json", "{\"x\": 1}");
    CHECK_FALSE(f.hit());
  }
  SECTION("mtime alone: dated back, same bytes") {
    f.files.set_mtime("/p/base.json", {written.tv_sec - 60, 0});
    CHECK_FALSE(f.hit());
  }
  SECTION("ctime alone: mtime put back as it was (touch -d cannot set ctime)") {
    f.files.write("/p/base.json", "{}");
    f.files.set_mtime("/p/base.json", written);
    CHECK(f.files.status("/p/base.json")->st_size == 2);
    CHECK_FALSE(f.hit());
  }
  SECTION("inode alone: replaced by a copy with the same size and times") {
    f.files.remove("/p/base.json");
    f.files.set_now(written);
    f.files.write("/p/base.json", "{}");
    CHECK_FALSE(f.hit());
  }
  SECTION("gone: nothing to stat, nothing answers") {
    f.files.remove("/p/base.json");
    CHECK_FALSE(stat_files(f.files, {"/p/line.json", "/p/base.json"}));
    CHECK_FALSE(f.hit());
  }
}

TEST_CASE("only files settled on the clock are remembered", "[unit][parsed_file_cache]") {
  ParsedCacheFixture f;
  f.files.write("/p/a.json", "{}");
  f.files.write("/p/b.json", "{}");
  f.files.advance(1999ms);
  f.remember({"/p/a.json", "/p/b.json"});
  CHECK_FALSE(f.hit());  // a change within the clock's tick would keep every stamp
  f.files.advance(1ms);
  f.files.write("/p/b.json", "{}");  // one of them changed just now: still not remembered
  f.remember({"/p/a.json", "/p/b.json"});
  CHECK_FALSE(f.hit());
  f.files.advance(2s);
  f.remember({"/p/a.json", "/p/b.json"});
  CHECK(f.hit());
}

TEST_CASE("a caller's stamps decide instead of stat when given", "[unit][parsed_file_cache]") {
  ParsedCacheFixture f;
  f.files.write("/p/a.json", "{}");
  f.files.advance(2s);
  const std::string stamp = file_identity(f.files, "/p/a.json");
  CHECK(stamp == file_identity(*f.files.status("/p/a.json")));
  f.remember({"/p/a.json"});
  f.files.write("/p/a.json", "{\"changed\": true}");
  CHECK_FALSE(f.hit());
  // As a device file is read: stamped as it was opened, not by its name again.
  CHECK(f.cache.read("test", "key", [&](const std::string&) { return stamp; }) ==
        std::optional<std::string>("parsed"));
  CHECK(file_identity(f.files, "/p/missing").empty());
}
