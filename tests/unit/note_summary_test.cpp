#include "diagnose/report.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

namespace {
std::string left_out(const std::string& entry, const std::string& root = "torch_npu_root") {
  return "device 'npu': left out include_dirs entry \"" + entry + "\" (npu.json:7): " + root +
         " is unknown (see --torch-npu-root)";
}
}  // namespace

TEST_CASE("left-out notes with one device and reason fold into one counted line",
          "[note_summary]") {
  std::vector<std::string> notes{"torch not found (python3 has no torch)", left_out("${a}"),
                                 left_out("${b}"), left_out("${c}")};
  std::vector<std::string> out = summarise_notes(notes);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == notes[0]);
  CHECK(out[1] ==
        "device 'npu': left out 3 entries: torch_npu_root is unknown (see --torch-npu-root); -v "
        "lists them");
}

TEST_CASE("one device's notes for different roots fold into one line naming each reason",
          "[note_summary]") {
  std::vector<std::string> notes{left_out("${a}"), left_out("${b}", "torch_root"),
                                 left_out("${c}")};
  CHECK(summarise_notes(notes) ==
        std::vector<std::string>{
            "device 'npu': left out 3 entries: torch_npu_root is unknown (see --torch-npu-root); "
            "torch_root is unknown (see --torch-npu-root); -v lists them"});
}

TEST_CASE("a note with no other of its kind stays as it is", "[note_summary]") {
  std::vector<std::string> notes{left_out("${a}"), "Python LIBDIR unknown: its -L left out"};
  CHECK(summarise_notes(notes) == notes);
}

TEST_CASE("libraries left out for want of torch are named on one line", "[note_summary]") {
  std::vector<std::string> notes{"torch not found: -ltorch left out of the npu options",
                                 "torch not found: -ltorch_npu left out of the npu options"};
  CHECK(
      summarise_notes(notes) ==
      std::vector<std::string>{"torch not found: -ltorch -ltorch_npu left out of the npu options"});
}
