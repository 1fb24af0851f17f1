#include "run/failure_message.hpp"

#include <filesystem>

namespace kbuild {

namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// Which provider (and file:line) asked for library `name`.
std::string added_by(const BuildOptions& options, const std::string& name) {
  for (const Entry& e : options.entries(OptionList::libraries)) {
    if (e.value != name) continue;
    std::string where = e.origin.provider;
    if (!e.origin.file.empty()) where += ", " + e.origin.file + ":" + std::to_string(e.origin.line);
    return where;
  }
  return "the passthrough or extra flags";
}

}  // namespace

std::string untouched_output(const std::string& output) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(output, ec)))
    return "; " + output + " left as it was";
  return "; no " + output + " written";
}

Error toolchain_error(const BuildOptions& options, const std::string& output,
                      const ProcessResult& process, const FailureAnalysis& a) {
  const std::string kept = untouched_output(output);
  if (a.step == FailedStep::link) {
    if (!a.missing_libraries.empty()) {
      std::string what;
      for (const std::string& lib : a.missing_libraries)
        what += (what.empty() ? "" : "; ") +
                ("cannot find -l" + lib + " (added by " + added_by(options, lib) + ")");
      std::vector<std::string> dirs = options.values(OptionList::libraries_dirs);
      return Error(ErrorKind::link_failed,
                   "link failed: " + what + "; searched " +
                       (dirs.empty() ? std::string("no -L dirs") : "-L " + join(dirs, ", ")) +
                       " and the system's; fix the library dirs or install the library" + kept);
    }
    if (!a.undefined_symbols.empty())
      return Error(ErrorKind::link_failed,
                   "link failed: undefined reference to '" + a.undefined_symbols.front() + "'" +
                       (a.undefined_symbols.size() > 1
                            ? " and " + std::to_string(a.undefined_symbols.size() - 1) + " more"
                            : std::string()) +
                       "; a library is missing from the link line" + kept);
    return Error(ErrorKind::link_failed,
                 "link failed (" + process.describe() + "): " + a.first_error + kept);
  }
  std::string first = a.first_error.empty() ? std::string() : ": " + a.first_error;
  return Error(ErrorKind::compile_failed,
               "compile failed (" + process.describe() + ")" + first + kept);
}

}  // namespace kbuild
