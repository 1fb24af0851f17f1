// Runs a planned build: the compiler writes into a private work directory
// beside the output (atomic_output.hpp); the result is renamed into place
// only when the compiler succeeded and wrote a well-formed output (and,
// with a load check, only once it loads), so the output appears whole or
// not at all and a failed build leaves the previous one untouched.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/build_plan.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/failure_analysis.hpp"
#include "kbuild/load_check.hpp"
#include "kbuild/output_cache.hpp"
#include "kbuild/process.hpp"

namespace kbuild {

// A compiler launcher (ccache, sccache, distcc, icecc, or any command),
// put before the compiler. The known ones can only cache or distribute
// compiling, so a source-to-library build is split for them: each source
// compiled to an object through the launcher, then one local link.
struct Launcher {
  std::vector<std::string> argv;  // empty: none
  bool split = false;
  // Replace -march=native in the launched compile steps by what it means on
  // this machine (distcc and icecc compile -march=native only locally).
  bool resolve_native = false;
};

// The flags -march=native stands for with `compiler` on this machine
// (from `compiler -### -march=native`); empty when they cannot be read.
std::vector<std::string> resolve_native_flags(const std::string& compiler, const Environment& env);
// Parses --launcher: words split like a shell; split for the known names.
Launcher parse_launcher(const std::string& text);

struct BuildSettings {
  LoadCheckSettings load_check;
  // Each compiler step is ended (its whole process group) after this long.
  std::optional<std::chrono::milliseconds> timeout;
  Launcher launcher;
  OutputCache* cache = nullptr;  // null or disabled: always compile
  // Have the compiler list the files it read (BuildOutcome::depfile_text).
  bool record_inputs = false;
  // Added to the cache key: what the command line cannot show (the identity
  // of the precompiled header it includes).
  std::vector<std::string> key_extra;
};

struct StageTiming {
  std::string stage;  // "compile", "load"
  double seconds = 0;
};

// What happened, filled in as the build goes (also when it fails).
struct BuildOutcome {
  std::optional<ProcessResult> process;         // the (last) compiler run, output captured
  std::vector<std::vector<std::string>> steps;  // what ran, when split for a launcher
  std::optional<FailureAnalysis> failure;
  std::optional<LoadCheckResult> load;
  std::string cache = "off";  // "off", "hit", "miss", "uncacheable"
  std::string cache_detail;   // why a miss was not stored
  std::vector<StageTiming> timings;
  std::optional<std::string> depfile_text;  // with record_inputs: what the compiler read
  struct timespec started {};               // file-system time the build started
};

// Throws Error: input (source missing or not a file), output (directory
// missing or unwritable), compiler_missing, compile_failed, link_failed,
// load_failed, interrupted. The compiler's output passes through as it runs.
void run_build(const BuildPlan& plan, const std::vector<std::string>& sources,
               const BuildSettings& settings, const Environment& env, BuildOutcome& outcome);

// Why the file open as `fd` is not a whole output of `kind` (an ELF object or
// library whose section headers fit in the file, a precompiled header), or
// nothing when it is.
std::optional<std::string> malformed_output(int fd, OutputKind kind);

}  // namespace kbuild
