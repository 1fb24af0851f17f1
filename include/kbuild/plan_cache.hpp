// The plan cache: what `kbuild --dry-run` printed (stdout, stderr, exit
// code), remembered under <cache root>/plans/ and keyed by everything that
// went into it: kbuild's identity, argv, the current directory, the user,
// whether stderr is a terminal, the value (or absence) of every environment
// variable consulted and the stamp of every file and directory read. A hit
// verifies all of it; any doubt is a miss. A run that started a program is
// not remembered, nor one whose inputs changed in the last two seconds.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kbuild {

class Environment;

struct PlanOutput {
  std::string out, err;
  int exit_code = 0;
};

// Whether argv asks for a dry run at all (no cache is looked at otherwise).
bool may_be_cached_dry_run(const std::vector<std::string>& argv);

// The output remembered for this run, when every input is as it was.
std::optional<PlanOutput> cached_plan(const std::vector<std::string>& argv, const Environment& env);

// Remembers `output` with the inputs recorded since start_recording_inputs()
// (a failure to write only costs speed).
void remember_plan(const std::vector<std::string>& argv, const Environment& env,
                   const PlanOutput& output);

// Starts recording what the run reads (util/input_record).
void start_plan_recording();

}  // namespace kbuild
