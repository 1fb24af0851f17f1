// How the CLI shows what the Driver answers: notes folded as asked, a
// listener that speaks through the Console, and each command's text or JSON
// on stdout. Only printing: every fact comes from the library.
#pragma once

#include <string>
#include <vector>

#include "console.hpp"
#include "kbuild/driver.hpp"

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
