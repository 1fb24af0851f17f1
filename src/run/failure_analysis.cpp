#include "kbuild/failure_analysis.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

namespace kbuild {

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

FailureAnalysis analyze_failure(const std::string& output, bool links) {
  // "file.cpp:12:3: error: ..." or "file.cpp:12: error: ..." from the compiler proper.
  static const std::regex diagnostic(R"(^[^:\s][^:]*:\d+(:\d+)?: (fatal )?error: )");
  static const std::regex missing_lib(R"(cannot find -l([^\s:]+))");
  static const std::regex undefined(R"(undefined reference to [`']([^']+)')");

  FailureAnalysis a;
  bool compile_error = false, link_error = false;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, missing_lib)) {
      link_error = true;
      add_unique(a.missing_libraries, m[1]);
    } else if (std::regex_search(line, m, undefined)) {
      link_error = true;
      add_unique(a.undefined_symbols, m[1]);
    } else if (line.find("collect2: error:") != std::string::npos ||
               line.find("ld returned") != std::string::npos ||
               line.rfind("/usr/bin/ld:", 0) == 0 || line.find(": ld: ") != std::string::npos) {
      link_error = true;
    } else if (std::regex_search(line, diagnostic)) {
      compile_error = true;
    } else {
      continue;
    }
    if (a.first_error.empty()) a.first_error = line;
  }
  // A compile error stops the build before any link, so it is the earlier stage.
  a.step = (links && link_error && !compile_error) ? FailedStep::link : FailedStep::compile;
  return a;
}

}  // namespace kbuild
