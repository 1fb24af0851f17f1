#include "console.hpp"

#include <unistd.h>

#include <iostream>

#include "kbuild/printable.hpp"
#include "kbuild/redact.hpp"

namespace kbuild::cli {

Console::Console(bool quiet, bool verbose, bool no_color_env)
    : quiet_(quiet), verbose_(verbose), colour_(!no_color_env && isatty(STDERR_FILENO)) {}

void Console::emit(const char* colour, const std::string& label, const std::string& raw) const {
  // One line, whatever paths it names; never a password.
  const std::string text = printable_line(redact_urls(raw));
  if (colour_)
    std::cerr << "\033[1mkbuild:\033[0m " << colour << label << "\033[0m " << text << "\n";
  else
    std::cerr << "kbuild: " << label << " " << text << "\n";
}

void Console::error(const Error& e) const {
  error(stage_name(e.kind()), e.what());
  if (!e.detail().empty())
    std::cerr << redact_urls(e.detail()) << (e.detail().back() == '\n' ? "" : "\n");
}

void Console::error(const std::string& stage, const std::string& message) const {
  emit("\033[1;31m", "error[" + stage + "]:", message);
}

void Console::warnings(const std::vector<std::string>& lines) const {
  if (quiet_) return;
  for (const std::string& l : lines) emit("\033[1;35m", "warning:", l);
}

void Console::notes(const std::vector<std::string>& lines) const {
  if (quiet_) return;
  for (const std::string& l : lines) emit("\033[1;36m", "note:", l);
}

void Console::info(const std::string& line) const {
  if (verbose_) emit("\033[1;32m", "info:", line);
}

}  // namespace kbuild::cli
