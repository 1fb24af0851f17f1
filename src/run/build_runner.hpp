// build_runner: the parts only the library uses (the API: kbuild/build_runner.hpp).
#pragma once

#include <string>

#include "kbuild/build_options.hpp"
#include "kbuild/build_runner.hpp"
#include "kbuild/error.hpp"
#include "kbuild/process.hpp"

// The one-line error for a failed compiler step, from its analysis: a
// missing library names the provider and device file that added it and the
// dirs searched; an undefined reference says a library is missing; a
// compile error quotes the first diagnostic.
namespace kbuild {

// The end of a failure's line: "; OUT left as it was" when an earlier
// output exists, "; no OUT written" when none did (nothing was kept).
std::string untouched_output(const std::string& output);

// `options` are the build's (for provenance), `output` the path kept as it was.
Error toolchain_error(const BuildOptions& options, const std::string& output,
                      const ProcessResult& process, const FailureAnalysis& analysis);

}  // namespace kbuild
