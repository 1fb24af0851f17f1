// read_package_version: __version__ read from version.py, never imported.
#include "site/site.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

TEST_CASE("read_package_version reads __version__ without importing anything",
          "[unit][package_version]") {
  TempDir dir;
  write_file(dir / "version.py", "# generated\n__version__ = \"2.11.0.post1\"\ngit = 'x'\n");
  CHECK(read_package_version(dir / "version.py") == std::optional<std::string>("2.11.0.post1"));
  write_file(dir / "empty.py", "version = '1'\n");
  CHECK_FALSE(read_package_version(dir / "empty.py"));
  CHECK_FALSE(read_package_version(dir / "missing.py"));
}

TEST_CASE("read_package_version: quotes, annotations, and lines that name no version",
          "[unit][package_version]") {
  TempDir dir;
  write_file(dir / "single.py", "__version__ = '1.2.3'\n");
  CHECK(read_package_version(dir / "single.py") == std::optional<std::string>("1.2.3"));
  write_file(dir / "annotated.py", "__version__: str = \"2.0.0+cpu\"  # 'note'\n");
  CHECK(read_package_version(dir / "annotated.py") == std::optional<std::string>("2.0.0+cpu"));
  // An empty value, or one that is not a string, is no version; a later line may be.
  write_file(dir / "later.py", "__version__ = ''\n__version__ = VERSION\n__version__ = '3'\n");
  CHECK(read_package_version(dir / "later.py") == std::optional<std::string>("3"));
  write_file(dir / "indented.py", "if x:\n    __version__ = '9'\n");
  CHECK_FALSE(read_package_version(dir / "indented.py"));
  write_file(dir / "unclosed.py", "__version__ = '1.0\n");
  CHECK_FALSE(read_package_version(dir / "unclosed.py"));
  // Only the first 200 lines are read: a huge file is not a version.py.
  write_file(dir / "huge.py", std::string(300, '\n') + "__version__ = '1'\n");
  CHECK_FALSE(read_package_version(dir / "huge.py"));
}

TEST_CASE("torch_is_rocm_build: a hip string is ROCm, None is not", "[unit][package_version]") {
  TempDir dir;
  write_file(dir / "rocm/version.py", "__version__ = '2.11.0+rocm6.4'\nhip = '6.4.1'\n");
  CHECK(torch_is_rocm_build(dir / "rocm"));
  write_file(dir / "cpu/version.py", "__version__ = '2.11.0+cpu'\nhip: Optional[str] = None\n");
  CHECK_FALSE(torch_is_rocm_build(dir / "cpu"));
}
