// observation: what the compiler and every program it ran were seen to read, look for, run,
// list, write and ask the environment (the observer library's records, src/observer).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbuild/environment.hpp"

// kbuild runs each compiler step with its observer preloaded (LD_PRELOAD),
// which every program the compiler runs inherits; each program image writes
// its records into a directory of the build's own. A manifest made from them
// holds what was observed, not what a model of the compiler guesses.
namespace kbuild {

struct Observation {
  // In the order first seen, each once.
  std::vector<std::string> read;      // opened for reading, loaded, dlopen'd
  std::vector<std::string> absent;    // looked for and not found
  std::vector<std::string> written;   // opened for writing, created, renamed to
  std::vector<std::string> appended;  // opened only to append to (a log)
  std::vector<std::string> listed;    // directories listed
  std::vector<std::string> executed;  // programs run that reported in (their images)
  // Each variable a program asked for, with the value it got (nullopt:
  // unset); a name twice when programs got different values (one set by a
  // program of the build for its children).
  std::vector<std::pair<std::string, std::optional<std::string>>> variables;
  // Programs run that never reported in (statically linked, setuid, or run
  // without the observer): their reads are unknown.
  std::vector<std::string> unobserved;
  bool reported = false;  // at least one program reported in
  // Why a step could not be observed at all (its launcher runs the compile
  // in a daemon or on another machine); "" when every step was.
  std::string unobservable;

  void merge(const Observation& other);
};

// `child` (the compiler's environment) with the observer preloaded in front
// of any LD_PRELOAD, recording into `record_dir` (absolute), from `cwd` (the
// compiler's working directory: paths relative to it stay relative).
void observe_into(Environment& child, const std::string& observer, const std::string& record_dir,
                  const std::string& cwd);

// The records in `record_dir`, every program image's file. `top` is the
// program kbuild ran (the compiler, or the launcher in front of it): it must
// have reported in too.
Observation read_observation(const std::string& record_dir, const std::string& top);

}  // namespace kbuild
