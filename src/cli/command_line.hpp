// kbuild's command line: what each command accepts, parsed with CLI11.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "build/session.hpp"
#include "diagnose/report.hpp"
#include "kbuild/error.hpp"
#include "printing.hpp"
#include "site/site.hpp"

namespace kbuild::cli {

// One parsed command line. `command` is empty for a build, else the
// subcommand: options, devices, explain, doctor, isa, build-many or cache.
struct CommandLine {
  std::string command;
  // What every subcommand understands (discovery, device files, the device).
  SiteRequest site;
  std::vector<std::string> device_files;
  bool allow_untrusted_device_files = false;
  std::string device = "cpu";
  std::string backend;
  std::vector<std::string> plugins;  // --plugin
  bool aot = false;
  bool compile_only = false;
  bool strict = false;
  std::string cxx;
  std::string isa = "auto";
  bool quiet = false;
  bool verbose = false;
  // What a build (and `explain`) is asked to do.
  std::vector<std::string> sources;
  std::string output;
  bool dry_run = false;
  bool inductor_line = false;
  bool precompile = false;
  bool preprocess = false;
  bool min_optimize = false;
  bool debug = false;
  bool no_warning_all = false;
  std::vector<std::string> extra_flags;
  std::string include_pch;
  std::vector<std::string> includes, definitions, lib_dirs, libs;
  std::string check_load;  // "": none; "true" (--check-load) or "strict" (--check-load=strict)
  std::vector<std::string> required_symbols;
  std::string report;
  std::string compile_commands;
  bool no_cache = false;
  std::string cache_max_size;
  std::string remote_cache;  // redis://HOST:PORT[/DB] or unix:///path
  bool remote_cache_readonly = false;
  std::string launcher;
  bool resolve_native = false;
  std::string pch;
  double timeout_s = 0;
  // The subcommands' own.
  bool json = false;                 // options, devices, doctor, isa, build-many, explain, cache
  std::string build_list;            // build-many: BUILDS.json
  unsigned jobs = 0;                 // build-many
  bool fail_fast = false;            // build-many
  std::string baseline;              // build-many: an earlier run's --json summary
  std::string fail_on = "failures";  // build-many: failures | regressions
  std::string baseline_missing;      // build-many: "" | error | empty
  std::string cache_action;          // cache
};

// Parses argv into `out`. Returns an exit code when the command line has
// been answered (--help, --version) or is wrong (a usage error, said on
// `console`); nullopt when `out` is ready to run.
std::optional<int> parse_command_line(int argc, char** argv,
                                      const std::function<std::string()>& version_text,
                                      const Console& console, CommandLine& out);

// The subcommands, in the order --help lists them.
std::vector<std::string> subcommand_names();

// A build whose missing "source" is a subcommand's name (or one typo from
// one): what to say instead of "no such file" (subcommands come first).
std::optional<std::string> misplaced_subcommand(const CommandLine& cl);

// The compiler a command line names: --cxx, else CXX, else g++.
std::string compiler_of(const CommandLine& cl, const Environment& env);
OutputKind output_kind(const CommandLine& cl);
// The library's request for what the command line asks: what to build and
// how to run it. Throws Error (usage) for modes that exclude each other or
// an unknown --isa.
BuildRequest make_request(const CommandLine& cl, const Environment& env);
// Why --report cannot be written where it is asked (checked before anything runs).
Status report_target_problem(const CommandLine& cl);

}  // namespace kbuild::cli
