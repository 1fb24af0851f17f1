
#include "printing.hpp"

#include "driver/doctor.hpp"

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "build/session.hpp"
#include "diagnose/report.hpp"
#include "run/input_manifest.hpp"
#include "util/json.hpp"
#include "util/text.hpp"

namespace kbuild::cli {

void say_notes(const Console& console, bool verbose, const std::vector<std::string>& notes,
               const std::string& warned_device) {
  if (console.quiet()) return;
  std::vector<std::string> said;
  const std::string repeat = "unknown device '" + warned_device + "'";
  for (const std::string& note : notes)
    if (warned_device.empty() || note.rfind(repeat, 0) != 0) said.push_back(note);
  console.notes(verbose ? said : summarise_notes(said));
}

void print_lines(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) std::cout << line << "\n";
}

void print_json(const nlohmann::ordered_json& value) {
  std::cout << dump_json(value, 2) << "\n";
}

void print_options(const DeviceOptionsAnswer& answer, bool json) {
  const BuildOptions& options = answer.device.options;
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (OptionList list : kAllOptionLists)
      out[std::string(list_name(list))] = options.values(list);
    print_json(out);
    return;
  }
  for (OptionList list : kAllOptionLists) {
    std::cout << list_name(list) << ":\n";
    for (const Entry& e : options.entries(list)) {
      std::cout << "  " << shell_quote(e.value) << "    # " << e.origin.provider;
      if (!e.origin.file.empty()) std::cout << " (" << e.origin.file_line() << ")";
      std::cout << "\n";
    }
  }
}

void print_devices(const std::vector<DeviceListing>& devices, bool json) {
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DeviceListing& d : devices) {
      nlohmann::ordered_json backends = nlohmann::ordered_json::array();
      for (const BackendInfo& bk : d.backends)
        backends.push_back({{"name", bk.name},
                            {"default", bk.is_default},
                            {"chain", bk.chain},
                            {"description", bk.description}});
      out.push_back({{"name", d.name},
                     {"kind", d.kind},
                     {"description", device_description(d)},
                     {"source", d.source},
                     {"mode", d.mode},
                     {"overrides", d.overridden},
                     {"backends", backends}});
    }
    print_json(out);
    return;
  }
  // A header, then one line per device: name, kind (mode), what it is, and
  // where it came from; its backends below it. Tab-separated for scripts.
  std::cout << "device\tkind\tdescription\tsource\n";
  for (const DeviceListing& d : devices) {
    std::cout << d.name << "\t" << d.kind;
    if (!d.mode.empty()) std::cout << " (" << d.mode << ")";
    std::cout << "\t" << device_description(d) << "\t" << d.source;
    for (const std::string& o : d.overridden) std::cout << "\t[overrides " << o << "]";
    std::cout << "\n";
    for (const BackendInfo& bk : d.backends) {
      std::cout << "  backend " << bk.name << (bk.is_default ? " (default)" : "") << ": device";
      for (const std::string& layer : bk.chain) std::cout << " -> " << layer;
      std::cout << "\n";
    }
  }
}

void print_doctor(const std::vector<DoctorCheck>& checks, bool json, const Console& console) {
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DoctorCheck& c : checks)
      out.push_back({{"check", c.name},
                     {"status", status_name(c.status)},
                     {"detail", c.detail},
                     {"hint", c.hint}});
    print_json(out);
    return;
  }
  for (const DoctorCheck& c : checks) {
    const char* colour = c.status == CheckStatus::ok     ? Console::kGreen
                         : c.status == CheckStatus::warn ? Console::kMagenta
                                                         : Console::kRed;
    std::cout << console.paint(colour, status_name(c.status)) << "\t" << c.name << "\t" << c.detail
              << "\n";
    if (c.status != CheckStatus::ok && !c.hint.empty()) std::cout << "\t\thint: " << c.hint << "\n";
  }
  std::cout << doctor_summary(checks) << "\n";
}

namespace {

// The status column as wide as its longest entry; with a baseline, each
// build's result before and how it moved, then a line per kind of move.
void print_batch_table(const std::vector<BatchSummaryRow>& rows,
                       const std::vector<BatchComparison>* comparisons) {
  auto status_of = [](const BatchSummaryRow& r) {
    return r.status != "failed" ? r.status
                                : r.stage + " (exit " + std::to_string(r.exit_code) + ")";
  };
  std::size_t width = std::string("status").size(), before_width = std::string("before").size();
  for (const BatchSummaryRow& r : rows) width = std::max(width, status_of(r).size());
  if (comparisons)
    for (const BatchComparison& c : *comparisons)
      before_width = std::max(before_width, c.before.size());
  const int w = static_cast<int>(width), bw = static_cast<int>(before_width);
  if (comparisons)
    std::printf("%-*s %8s  %-*s  %-11s  %s\n", w, "status", "seconds", bw, "before", "change",
                "build");
  else
    std::printf("%-*s %8s  %s\n", w, "status", "seconds", "build");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const BatchSummaryRow& r = rows[i];
    if (comparisons) {
      const BatchComparison& c = (*comparisons)[i];
      std::printf("%-*s %8.2f  %-*s  %-11s  %s\n", w, status_of(r).c_str(), r.seconds, bw,
                  c.before.empty() ? "-" : c.before.c_str(), migration_name(c.migration),
                  r.name.c_str());
    } else {
      std::printf("%-*s %8.2f  %s\n", w, status_of(r).c_str(), r.seconds, r.name.c_str());
    }
  }
  if (!comparisons) return;
  for (Migration m : {Migration::fixed, Migration::deeper, Migration::new_failure,
                      Migration::shallower, Migration::changed, Migration::added,
                      Migration::removed, Migration::skipped, Migration::unchanged}) {
    std::vector<std::string> names;
    for (const BatchComparison& c : *comparisons)
      if (c.migration == m)
        names.push_back(
            c.name + (m == Migration::unchanged || m == Migration::added || m == Migration::skipped
                          ? ""
                          : " (" + (c.before.empty() ? "-" : c.before) + " -> " +
                                (c.now.empty() ? "-" : c.now) + ")"));
    if (names.empty()) continue;
    std::string line = std::string(migration_name(m)) + ": " + std::to_string(names.size());
    for (std::size_t i = 0; i < names.size() && i < 20; ++i) line += (i ? ", " : " ") + names[i];
    if (names.size() > 20) line += ", ...";
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

void print_batch(const BatchRun& run, bool json) {
  const std::vector<BatchComparison>* compared = run.comparisons ? &*run.comparisons : nullptr;
  if (json) {
    print_json(batch_summary_json(run.rows, run.parallel, compared));
    return;
  }
  print_batch_table(run.rows, compared);
  const auto count = [&](const char* status) {
    return std::count_if(run.rows.begin(), run.rows.end(),
                         [&](const BatchSummaryRow& r) { return r.status == status; });
  };
  std::string stages;
  for (const auto& [stage, n] : failures_by_stage(run.rows))
    stages += (stages.empty() ? " (" : ", ") + std::to_string(n) + " " + stage;
  if (!stages.empty()) stages += ")";
  std::printf("%td built, %td failed%s, %td skipped, -j %u\n", count("ok"), count("failed"),
              stages.c_str(), count("skipped"), run.parallel);
}

}  // namespace kbuild::cli

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
  // The detail (a provider's stderr) first, then the error line last, as
  // after a compiler's diagnostics: the line a reader looks for is the last.
  if (!e.detail().empty())
    std::cerr << redact_urls(e.detail()) << (e.detail().back() == '\n' ? "" : "\n");
  error(stage_name(e.kind()), e.what());
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
  std::string detail = outcome.cache_detail;
  // Why a miss missed: the input of the entry found that differs now.
  if (outcome.cache == CacheStatus::miss && outcome.stale)
    detail += (detail.empty() ? "" : "; ") + std::string("an entry was found, but ") +
              describe(*outcome.stale);
  else if (outcome.cache == CacheStatus::miss && detail.empty())
    detail = "no entry";
  console.info(std::string("cache: ") + cache_status_name(outcome.cache) +
               (detail.empty() ? "" : " (" + detail + ")") +
               (outcome.cache == CacheStatus::hit
                    ? "; " + output + " copied from the cache, no compiler ran"
                    : ""));
  for (const StageTiming& t : outcome.timings)
    console.info(t.stage + " took " + std::to_string(t.seconds) + " s");
}

}  // namespace kbuild::cli
