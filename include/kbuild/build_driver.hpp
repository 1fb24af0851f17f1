// A whole build as a command line asks for it, in order: every setting made
// first, the PCH planned (and built, unless a dry run), the build planned
// into steps, the compilation database written, the steps run (unless a dry
// run). The CLI parses into a BuildJob, calls drive_build, and prints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/build_context.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"

namespace kbuild {

// What a build says as it goes, for the caller to show (the library prints
// nothing). Called in order, before the compiler runs where it can be.
class BuildListener {
 public:
  virtual ~BuildListener() = default;
  virtual void warnings(const std::vector<std::string>& lines) = 0;
  virtual void notes(const std::vector<std::string>& lines) = 0;
  // Every note of the plan at once, when the plan is made (the caller may
  // fold them); the other notes come through notes().
  virtual void plan_notes(const std::vector<std::string>& lines) = 0;
  virtual void info(const std::string& line) = 0;
  // A device one typo from a registered one (unknown_device_warning): said
  // as a warning; the plan's note about it would only repeat it.
  virtual void unknown_device(const std::string& /*device*/, const std::string& warning) {
    warnings({warning});
  }
};

// One build's request and settings, as parsed.
struct BuildJob {
  BuildRequest request;
  RunOptions run;
  std::string pch;           // --pch HEADER ("": none)
  std::string remote_cache;  // --remote-cache ("": KBUILD_REMOTE_CACHE, the device file's)
  bool remote_cache_readonly = false;
  std::string compile_commands;  // --compile-commands FILE ("": none)
  bool verbose = false;          // -v: say where the remote cache setting came from
};

// Plans and (unless job.run.dry_run) runs `job`, filling `record` as far as
// it gets: request, PCH lines, plan, steps, outcome, notes. Throws Error. A
// compilation database that is not kbuild's to change does not stop the
// build: its error is left in `record.left_alone_database`, for the caller
// to raise once the build is done.
void drive_build(Session& session, const BuildJob& job, const Environment& env,
                 BuildListener& listener, BuildRecord& record);

// What a dry run prints: each PCH step, then each step of the plan, one line
// each; with `inductor_line`, Inductor's own line of a one-step plan. Throws
// Error (usage) for --inductor-line on a plan of more steps.
std::vector<std::string> dry_run_lines(const BuildRecord& record, bool inductor_line);

// A device no one registered that is one typo from one that is: the warning
// naming it (upstream's empty device options still apply), or nothing.
// Throws Error (usage) instead with `strict`.
std::optional<std::string> unknown_device_warning(const Session& session, const std::string& device,
                                                  bool strict);

}  // namespace kbuild
