// report: the build report (--report) and the notes a build printed; the parts the rest of the
// library uses.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "build/compilation.hpp"
#include "devices/plugin.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"

// The evidence report (--report FILE.json): enough to reproduce a build, or
// its failure, elsewhere. Schema: docs/report.md ("kbuild-report/1").
namespace kbuild {

struct ReportInput {
  std::vector<std::string> kbuild_argv;
  std::string cwd;
  const BuildRequest* request = nullptr;  // null when the command line did not parse
  const BuildPlan* plan = nullptr;        // null when it failed before assembling
  const BuildOutcome* outcome = nullptr;  // null when nothing ran
  std::vector<std::string> steps;         // the planned steps, as --dry-run prints them
  std::vector<std::string> notes;         // every note kbuild said (site, device, plan)
  std::string backend;                    // the backend resolved (asked for, else the default)
  bool torch_found = false;               // the torch layer applied (asked for and torch found)
  std::string compiler_path;
  std::string compiler_version;                // `CXX --version`, first line
  std::vector<std::string> device_files;       // device files read, in order
  std::string provider_kind, provider_source;  // of the requested device
  const Environment* env = nullptr;            // for the variables consulted
  std::vector<StageTiming> timings;            // kbuild's own stages (config, resolve)
  std::string torch_version;                   // torch's version.py ("" unknown)
  std::string profile;                         // the Inductor profile, as describe() names it
  std::string profile_line;                    // its line ("2.11"; "" unknown)
  std::string profile_evidence;                // what it rests on (ProfileChoice::evidence)
  std::vector<PluginStatus> plugins;           // the version matrix of active plugins
  const Error* error = nullptr;                // null on success
  int exit_code = 0;
};

nlohmann::ordered_json build_report(const ReportInput& in);

// Compiler output kept in a report, at most this many bytes (the tail).
inline constexpr std::size_t kReportOutputLimit = std::size_t{64} * 1024;

}  // namespace kbuild

// Notes as a person reads them: the entries a device left out become one
// line that counts them, instead of one line per entry.
namespace kbuild {

// `notes` with the "left out" notes of each device folded into one line
// that counts them and names each distinct reason (ending "; -v lists
// them"), and the libraries left out for want of torch named on one line;
// other notes, and a note with no other of its kind, as they are. Each
// group stands where its first note stood.
std::vector<std::string> summarise_notes(const std::vector<std::string>& notes);

}  // namespace kbuild

// The report of one Compilation, and where it may be written.
namespace kbuild {

// The evidence report (--report) of `compilation`, run as `kbuild_argv`
// asked, with the first line of its compiler's `--version` (which the
// caller asked: diagnose runs nothing; Driver::report).
nlohmann::ordered_json report_of(const Compilation& compilation,
                                 const std::vector<std::string>& kbuild_argv,
                                 const Environment& env, const std::string& compiler_version);

// Why --report must not be written at `report`: it is a source or the
// output (it would be overwritten; usage), or not a regular file (output):
// a failure whose kind is the exit code.
Status report_path_problem(const std::string& report, const std::vector<std::string>& sources,
                           const std::string& output);

}  // namespace kbuild
