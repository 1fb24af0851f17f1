// Trust of device files and the programs they name: refused when someone
// other than the user or root could have written them or their directory.
#include "devices/trust.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;
namespace fs = std::filesystem;

namespace {

void chmod_or_fail(const std::string& path, mode_t mode) {
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

}  // namespace

TEST_CASE("untrusted_reason: the problem, the fix and the override", "[unit][trust]") {
  TempDir tmp;
  write_file(tmp / "ok.json", "{}");
  CHECK_FALSE(untrusted_reason(tmp / "ok.json", "device file"));
  CHECK_FALSE(untrusted_reason(tmp / "missing.json", "device file"));  // the caller says why

  write_file(tmp / "open.json", "{}");
  chmod_or_fail(tmp / "open.json", 0666);
  auto open = untrusted_reason(tmp / "open.json", "device file");
  REQUIRE(open);
  CHECK(*open == "device file " + tmp / "open.json" +
                     " is world-writable (mode 0666); refusing to use it: run chmod o-w " +
                     tmp / "open.json" + ", or pass --allow-untrusted-config if you trust it");

  write_file(tmp / "theirs.json", "{}");
  REQUIRE(::chown((tmp / "theirs.json").c_str(), ::geteuid() + 4242, 0) == 0);
  auto theirs = untrusted_reason(tmp / "theirs.json", "device file");
  REQUIRE(theirs);
  CHECK(theirs->find("is owned by uid " + std::to_string(::geteuid() + 4242)) != std::string::npos);
  CHECK(theirs->find("refusing to use it: chown it") != std::string::npos);

  write_file(tmp / "group.json", "{}");
  REQUIRE(::chown((tmp / "group.json").c_str(), ::geteuid(), 4242424) == 0);
  chmod_or_fail(tmp / "group.json", 0664);
  auto group = untrusted_reason(tmp / "group.json", "device file");
  REQUIRE(group);
  CHECK(group->find("run chmod g-w") != std::string::npos);
}

TEST_CASE("untrusted_file_reason: a file in a directory others can write is refused",
          "[unit][trust]") {
  TempDir tmp;
  fs::create_directory(tmp / "shared");
  write_file(tmp / "shared/acc.json", "{}");
  chmod_or_fail(tmp / "shared", 0777);
  auto reason = untrusted_file_reason(tmp / "shared/acc.json", "device file");
  REQUIRE(reason);
  CHECK(*reason == "device file " + tmp / "shared/acc.json" + " is in " + tmp / "shared" +
                       ", which is world-writable (mode 0777); refusing to use it: move it to a "
                       "directory only you can write, or pass --allow-untrusted-config if you "
                       "trust it");
  // The sticky bit does not make the file's own directory safe.
  chmod_or_fail(tmp / "shared", 01777);
  CHECK(untrusted_file_reason(tmp / "shared/acc.json", "device file"));
  chmod_or_fail(tmp / "shared", 0755);
  CHECK_FALSE(untrusted_file_reason(tmp / "shared/acc.json", "device file"));
}

TEST_CASE("a link is judged by where it leads, every directory up from there", "[unit][trust]") {
  TempDir tmp;
  fs::create_directories(tmp / "open/inner");
  write_file(tmp / "open/inner/acc.json", "{}");
  chmod_or_fail(tmp / "open", 0777);  // above the file's own directory, no sticky bit
  fs::create_directory(tmp / "mine");
  fs::create_symlink(tmp / "open/inner/acc.json", tmp / "mine/acc.json");
  auto reason = untrusted_file_reason(tmp / "mine/acc.json", "device file");
  REQUIRE(reason);
  CHECK(reason->find("device file " + tmp / "mine/acc.json" + " is in " + tmp / "open") == 0);

  // A shared directory with the sticky bit higher up (as /tmp) is fine.
  chmod_or_fail(tmp / "open", 01777);
  CHECK_FALSE(untrusted_file_reason(tmp / "mine/acc.json", "device file"));
}

TEST_CASE("untrusted_opened_file_reason checks the file opened, not its name now",
          "[unit][trust]") {
  TempDir tmp;
  write_file(tmp / "acc.json", "{}");
  int fd = ::open((tmp / "acc.json").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK_FALSE(untrusted_opened_file_reason(fd, tmp / "acc.json", "acc.json", "device file"));
  chmod_or_fail(tmp / "acc.json", 0646);
  auto reason = untrusted_opened_file_reason(fd, tmp / "acc.json", "acc.json", "device file");
  REQUIRE(reason);
  CHECK(reason->find("device file acc.json is world-writable (mode 0646)") == 0);
  ::close(fd);
}
