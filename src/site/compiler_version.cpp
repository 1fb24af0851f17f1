#include "site/compiler_version.hpp"

#include <chrono>

#include "kbuild/error.hpp"
#include "kbuild/process.hpp"

namespace kbuild {

CompilerVersion compiler_version(const std::string& compiler, const Environment& env) {
  CompilerVersion v;
  v.path = find_executable(compiler, env);
  if (!v.path) return v;
  ProcessOptions opts;
  opts.capture_output = true;
  opts.timeout = std::chrono::seconds(20);
  try {
    ProcessResult r = run_process({*v.path, "--version"}, opts);
    if (r.success())
      v.first_line = r.out.substr(0, r.out.find('\n'));
    else
      v.failure = r.describe();
  } catch (const Error& e) {
    v.failure = e.what();
  }
  return v;
}

}  // namespace kbuild
