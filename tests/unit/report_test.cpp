// build_report: the evidence a failed or finished build leaves (schema
// kbuild-report/1), from what the build recorded.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "diagnose/report.hpp"
#include "util/file_system.hpp"

using namespace kbuild;
using kbuild_test::TempDir;
using kbuild_test::write_file;

TEST_CASE("a report of a command line that did not parse: what is known, nulls elsewhere",
          "[unit][report]") {
  Error error(ErrorKind::usage, "unknown option --bogus");
  ReportInput in;
  in.kbuild_argv = {"kbuild", "--bogus"};
  in.cwd = "/w";
  in.error = &error;
  in.exit_code = 2;
  auto r = build_report(in);
  CHECK(r["schema"] == "kbuild-report/1");
  CHECK(r["kbuild_argv"] == nlohmann::json({"kbuild", "--bogus"}));
  CHECK_FALSE(r.contains("request"));
  CHECK_FALSE(r.contains("argv"));
  CHECK_FALSE(r.contains("cache"));
  CHECK(r["versions"]["torch"].is_null());
  CHECK(r["result"]["ok"] == false);
  CHECK(r["result"]["exit_code"] == 2);
  CHECK(r["result"]["stage"] == "usage");
  CHECK(r["result"]["message"] == "unknown option --bogus");
}

TEST_CASE("device files are named with their SHA-1; variables consulted with their values",
          "[unit][report]") {
  TempDir tmp;
  write_file(tmp / "acc.json", "{}");
  Environment env{{{"SET", "v"}}};
  (void)env.get("SET");
  (void)env.get("UNSET");
  ReportInput in;
  in.device_files = {tmp / "acc.json", tmp / "gone.json"};
  in.env = &env;
  auto r = build_report(in);
  CHECK(r["config_files"][0]["sha1"] == sha1_hex("{}"));
  CHECK(r["config_files"][1]["sha1"] == "");
  CHECK(r["environment"]["SET"] == "v");
  CHECK(r["environment"]["UNSET"].is_null());
  CHECK(r["result"]["ok"] == true);
}

TEST_CASE("compiler output is kept up to the limit, its tail, and marked when cut",
          "[unit][report]") {
  BuildOutcome outcome;
  ProcessResult p;
  p.exited = true;
  p.exit_code = 1;
  p.err = std::string(kReportOutputLimit, 'a') + std::string(100, 'z');  // stderr alone too long
  outcome.process = p;
  ReportInput in;
  in.outcome = &outcome;
  auto r = build_report(in);
  const std::string kept = r["compiler_run"]["stderr"];
  CHECK(kept.size() == kReportOutputLimit);
  CHECK(kept.substr(kept.size() - 100) == std::string(100, 'z'));
  CHECK(r["compiler_run"]["stdout"] == "");
  CHECK(r["compiler_run"]["truncated"] == true);
  CHECK(r["compiler_run"]["exit_code"] == 1);
  CHECK(r["compiler_run"]["signal"].is_null());

  outcome.process->err = "short";
  CHECK(build_report(in)["compiler_run"]["truncated"] == false);
  // Output the capture itself had to cut is not whole either.
  outcome.process->output_truncated = true;
  CHECK(build_report(in)["compiler_run"]["truncated"] == true);
}

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
