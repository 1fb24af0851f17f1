// The CLI's output: its voice on stderr (the Console) and each command's answer on stdout.
#pragma once

#include <string>
#include <vector>

#include "driver/driver.hpp"
#include "kbuild/error.hpp"
#include "run/build_runner.hpp"

// The CLI's voice on stderr: `kbuild: error[STAGE]: ...`, warnings and notes,
// coloured on a terminal (not with NO_COLOR), quiet or verbose on request.
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

// How the CLI shows what the Driver answers: notes folded as asked, a
// listener that speaks through the Console, and each command's text or JSON
// on stdout. Only printing: every fact comes from the library.
namespace kbuild::cli {

// Notes as the user asked for them: folded ("-v lists them"), or every one.
// `warned_device`: a device already warned about as unknown, whose note
// would only repeat the warning.
void say_notes(const Console& console, bool verbose, const std::vector<std::string>& notes,
               const std::string& warned_device = "");

// Prints what the Driver says, as it says it.
class ConsoleListener : public BuildListener {
 public:
  ConsoleListener(const Console& console, bool verbose, std::string warned_device = "")
      : console_(console), verbose_(verbose), warned_device_(std::move(warned_device)) {}
  void warnings(const std::vector<std::string>& lines) override { console_.warnings(lines); }
  void notes(const std::vector<std::string>& lines) override { console_.notes(lines); }
  void plan_notes(const std::vector<std::string>& lines) override {
    say_notes(console_, verbose_, lines, warned_device_);
    plan_notes_said = true;
  }
  void info(const std::string& line) override { console_.info(line); }
  void unknown_device(const std::string& device, const std::string& warning) override {
    console_.warnings({warning});
    warned_device_ = device;
  }
  const std::string& warned_device() const { return warned_device_; }
  bool plan_notes_said = false;

 private:
  const Console& console_;
  bool verbose_;
  std::string warned_device_;
};

void print_lines(const std::vector<std::string>& lines);
void print_json(const nlohmann::ordered_json& value);

void print_options(const DeviceOptionsAnswer& answer, bool json);
void print_devices(const std::vector<DeviceListing>& devices, bool json);
void print_doctor(const std::vector<DoctorCheck>& checks, bool json, const Console& console);
// build-many's table (with a baseline: before, and how each build moved,
// then a line per kind of move) and its last line, or the JSON summary.
void print_batch(const BatchRun& run, bool json);

}  // namespace kbuild::cli
