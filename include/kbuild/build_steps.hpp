// The steps a build runs on a cache miss, as data: decided before anything
// runs, printed by --dry-run, explain and --report, and only executed by
// run_build (clang's Driver -> Compilation -> Job). A plain build is one
// step whose argv is Inductor's; a launcher that only compiles (ccache,
// distcc, ...) gets one compile step per source and a local link; a load
// check is a step of its own.
#pragma once

#include <string>
#include <vector>

#include "kbuild/build_plan.hpp"
#include "kbuild/launcher.hpp"

namespace kbuild {

enum class StepKind { command, load_check };

// How a command step's compiler lists the files it read.
enum class InputList {
  none,
  argv,         // -MD -MF FILE on its command line (known launchers)
  environment,  // SUNPRO_DEPENDENCIES (argv stays Inductor's)
};

struct Step {
  StepKind kind = StepKind::command;
  std::vector<std::string> argv;
  // argv positions that name files of the build's own (the result, objects,
  // dependency lists): planned beside the output with names derived from the
  // output's and the sources' names; run in the build's private work
  // directory under the same file names.
  std::vector<std::size_t> work_files;
  std::size_t compiler_index = 0;  // argv[compiler_index] is the compiler
  std::size_t output_index = 0;    // argv[output_index] is what it writes
  std::string source;              // the one source a split compile step reads
  bool links = false;              // a link (its failures are link failures)
  InputList input_list = InputList::none;
  std::size_t input_list_index = 0;  // with InputList::argv: argv[i] is the file
  std::string comment;               // a load check: what `# ...` says
};

struct StepInput {
  std::vector<std::string> sources;
  Launcher launcher;
  // What -march=native stands for here, when the launcher resolves it.
  std::vector<std::string> native_flags;
  bool record_inputs = false;  // the compiler must list what it read
  bool load_check = false;
  std::vector<std::string> required_symbols;
};

// Throws Error(compiler_missing) when the launcher resolves -march=native
// and `native_flags` is empty.
std::vector<Step> plan_steps(const BuildPlan& plan, const StepInput& in);

// One shell-safe line per command step, `# ...` for the others.
std::vector<std::string> step_lines(const std::vector<Step>& steps);

// Whether any step links objects alone (reads no headers).
bool links_objects_only(const std::vector<std::string>& sources);

}  // namespace kbuild
