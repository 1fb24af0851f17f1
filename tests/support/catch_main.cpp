// Catch2's main, and a listener that leaves this run's totals where
// scripts/count-tests reads them: KBUILD_TEST_COUNTS_DIR/KBUILD_TEST_NAME.json,
// {"passed": N, "failed": N} in test cases (set by tests/meson.build and
// scripts/test; unset, nothing is written). A run that dies first leaves no
// file, and counts as one failed test by Meson's result.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace {

class CountsListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    const char* dir = std::getenv("KBUILD_TEST_COUNTS_DIR");
    const char* name = std::getenv("KBUILD_TEST_NAME");
    if (!dir || !*dir || !name || !*name) return;
    std::error_code ignored;  // a folder it cannot make: no file, and one test by Meson's result
    std::filesystem::create_directories(dir, ignored);
    const std::string path = std::string(dir) + "/" + name + ".json";
    if (std::FILE* f = std::fopen(path.c_str(), "w")) {
      const Catch::Counts& cases = stats.totals.testCases;
      std::fprintf(f, "{\"passed\": %zu, \"failed\": %zu}\n", cases.passed, cases.failed);
      std::fclose(f);
    }
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(CountsListener)
