#include "console.hpp"

#include <unistd.h>

#include <iostream>

#include "util/printable.hpp"
#include "util/redact.hpp"
#include "util/shell.hpp"

namespace kbuild::cli {

Console::Console(bool quiet, bool verbose, bool no_color_env)
    : quiet_(quiet),
      verbose_(verbose),
      colour_(!no_color_env && isatty(STDERR_FILENO)),
      stdout_colour_(!no_color_env && isatty(STDOUT_FILENO)) {}

std::string Console::paint(const char* colour, const std::string& text) const {
  return stdout_colour_ ? colour + text + "\033[0m" : text;
}

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
  emit(kRed, "error[" + stage + "]:", message);
}

void Console::warnings(const std::vector<std::string>& lines) const {
  if (quiet_) return;
  for (const std::string& l : lines) emit(kMagenta, "warning:", l);
}

void Console::notes(const std::vector<std::string>& lines) const {
  if (quiet_) return;
  for (const std::string& l : lines) emit("\033[1;36m", "note:", l);
}

void Console::info(const std::string& line) const {
  if (verbose_) emit("\033[1;32m", "info:", line);
}

void say_what_ran(const Console& console, const BuildOutcome& outcome, const std::string& output) {
  // On a hit nothing ran: say so rather than name a command.
  if (outcome.cache != CacheStatus::hit)
    for (const auto& step : outcome.steps) console.info("ran: " + shell_join(step));
  console.info(std::string("cache: ") + cache_status_name(outcome.cache) +
               (outcome.cache_detail.empty() ? "" : " (" + outcome.cache_detail + ")") +
               (outcome.cache == CacheStatus::hit
                    ? "; " + output + " copied from the cache, no compiler ran"
                    : ""));
  for (const StageTiming& t : outcome.timings)
    console.info(t.stage + " took " + std::to_string(t.seconds) + " s");
}

}  // namespace kbuild::cli
