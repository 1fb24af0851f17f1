// Where kbuild looks for libraries: the linker's search dirs (through a fake
// compiler), the files a -l name can be, the loader's dirs.
#include "site/search.hpp"

#include <catch2/catch.hpp>

#include "../support/fake_process_runner.hpp"
#include "../support/test_support.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

namespace {

using ScriptedCompiler = kbuild_test::ScriptedRunner;
using kbuild_test::exited;

}  // namespace

TEST_CASE("library_files: the shared library first, then the archive", "[unit][library_search]") {
  CHECK(library_files("acc", "/opt/lib") == Strings{"/opt/lib/libacc.so", "/opt/lib/libacc.a"});
}

TEST_CASE("find_shared_library: LD_LIBRARY_PATH first, a versioned name counts",
          "[unit][library_search]") {
  kbuild_test::TempDir tmp;
  kbuild_test::write_file(tmp / "a/libacc.so.2", "");
  kbuild_test::write_file(tmp / "b/libacc.so", "");
  kbuild_test::write_file(tmp / "b/libaccx.so", "");
  Environment env{{{"LD_LIBRARY_PATH", tmp / "missing" + "::" + tmp / "a" + ":" + tmp / "b"}}};
  CHECK(find_shared_library("acc", env) == std::optional<std::string>(tmp / "a"));
  CHECK(find_shared_library("accx", env) == std::optional<std::string>(tmp / "b"));
  CHECK_FALSE(find_shared_library("no_such_library_anywhere", env));
}
