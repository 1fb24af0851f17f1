// The CLI's voice on stderr: `kbuild: error[STAGE]: ...`, warnings and notes,
// coloured on a terminal (not with NO_COLOR), quiet or verbose on request.
#pragma once

#include <string>
#include <vector>

#include "kbuild/build_runner.hpp"
#include "kbuild/error.hpp"

namespace kbuild::cli {

class Console {
 public:
  // Colour when stderr is a terminal and NO_COLOR is unset or empty.
  Console(bool quiet, bool verbose, bool no_color_env);

  void error(const Error& e) const;
  void error(const std::string& stage, const std::string& message) const;
  void warnings(const std::vector<std::string>& lines) const;
  void notes(const std::vector<std::string>& lines) const;
  // Only with --verbose.
  void info(const std::string& line) const;
  // -q: notes are not said (so not worth summarising either).
  bool quiet() const { return quiet_; }
  // `text` coloured as this console colours its labels, for stdout (doctor's
  // table): only when stdout is a terminal and NO_COLOR is unset.
  std::string paint(const char* colour, const std::string& text) const;
  static constexpr const char* kRed = "\033[1;31m";
  static constexpr const char* kMagenta = "\033[1;35m";
  static constexpr const char* kGreen = "\033[32m";

 private:
  void emit(const char* colour, const std::string& label, const std::string& raw) const;

  bool quiet_, verbose_, colour_, stdout_colour_;
};

// With -v: what ran (nothing, on a cache hit), the cache's answer, timings;
// a build and `kbuild cc` say it alike.
void say_what_ran(const Console& console, const BuildOutcome& outcome, const std::string& output);

}  // namespace kbuild::cli
