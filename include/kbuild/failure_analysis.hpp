// Why a compiler run failed, read off what it printed: a compile error
// (a diagnostic with file:line) or a link error (a library not found, an
// undefined reference), so the report names the earliest failing stage.
#pragma once

#include <string>
#include <vector>

namespace kbuild {

enum class FailedStep { compile, link };

struct FailureAnalysis {
  FailedStep step = FailedStep::compile;
  std::vector<std::string> missing_libraries;  // from "cannot find -lNAME"
  std::vector<std::string> undefined_symbols;  // from "undefined reference to `X'"
  std::string first_error;                     // the first error line, for the summary
};

// `output` is the compiler's stdout+stderr; `links` whether the command links.
FailureAnalysis analyze_failure(const std::string& output, bool links);

}  // namespace kbuild
