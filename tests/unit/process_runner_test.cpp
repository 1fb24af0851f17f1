// real_processes(): the runner a build uses when no fake is given.
#include "util/process.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

TEST_CASE("real_processes runs the program as run_process does", "[unit][process_runner]") {
  ProcessRunner& runner = real_processes();
  CHECK(&runner == &real_processes());  // one for the process
  ProcessOptions options;
  options.capture_output = true;
  ProcessResult r = runner.run({"/bin/sh", "-c", "echo out; echo err >&2; exit 2"}, options);
  CHECK(r.exited);
  CHECK(r.exit_code == 2);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
}
