// data_dir: KBUILD_DATA_DIR, else beside the binary, else (a build tree,
// as this test runs in) the source tree's configs.
#include "util/environment.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;
namespace fs = std::filesystem;

TEST_CASE("KBUILD_DATA_DIR wins when set and not empty", "[unit][install_layout]") {
  CHECK(data_dir(Environment{{{"KBUILD_DATA_DIR", "/opt/kbuild-data"}}}) == "/opt/kbuild-data");
  CHECK(data_dir(Environment{{{"KBUILD_DATA_DIR", ""}}}) != "");
}

TEST_CASE("from the build tree, the source tree's configs", "[unit][install_layout]") {
  const fs::path dir = data_dir(Environment());
  CHECK(fs::equivalent(dir, fs::path(kbuild_test::source_root()) / "configs"));
  CHECK(fs::is_directory(dir / "devices"));
}

TEST_CASE("kbuild_program: the running binary's real path, which names this binary",
          "[unit][install_layout]") {
  const std::string program = kbuild_program();
  CHECK(program != "/proc/self/exe");
  CHECK(fs::path(program).is_absolute());
  CHECK(fs::equivalent(program, "/proc/self/exe"));
}
