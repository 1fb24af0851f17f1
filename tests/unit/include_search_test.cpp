// include_search_dirs through a fake compiler: the words it is asked with,
// and the search list read off its -v output.
#include "site/search.hpp"

#include <catch2/catch.hpp>

#include "../support/fake_process_runner.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

namespace {

using ScriptedCompiler = kbuild_test::ScriptedRunner;
using kbuild_test::exited;

}  // namespace

TEST_CASE("include_search_dirs asks with the search words only and reads -v's list",
          "[unit][include_search]") {
  ScriptedCompiler g;
  g.answer = exited(0, "",
                    "ignored\n"
                    "#include \"...\" search starts here:\n"
                    " /q/dir/\n"
                    "#include <...> search starts here:\n"
                    " /usr/include/c++/12\n"
                    " /sys/../usr/include\n"
                    " /Library/Frameworks (framework directory)\n"
                    "End of search list.\n"
                    " /after/end\n");
  Environment env;
  Strings dirs = include_search_dirs({"/usr/bin/g++", "k.cpp", "-O3", "-I", "/a", "-I/b",
                                      "-isystem", "/c", "-std=c++17", "-DX=1", "-o", "k.so"},
                                     env, g);
  CHECK(dirs == Strings{"/q/dir", "/usr/include/c++/12", "/usr/include", "/Library/Frameworks"});
  REQUIRE(g.asked.size() == 1);
  CHECK(g.asked[0] == Strings{"/usr/bin/g++", "-I", "/a", "-I/b", "-isystem", "/c", "-std=c++17",
                              "-E", "-v", "-x", "c++", "/dev/null", "-o", "/dev/null"});

  g.answer = exited(1, "", "#include <...> search starts here:\n /x\nEnd of search list.\n");
  CHECK(include_search_dirs({"/usr/bin/g++"}, env, g).empty());
  CHECK(include_search_dirs({}, env, g).empty());
}
