// Trust of device files and the programs they name: refused when someone
// other than the user or root could have written them or their directory.
#include "util/trusted_dir.hpp"

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
