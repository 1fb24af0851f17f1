// doctor's verdict: the worst check, and the summary line under the table.
#include "diagnose/doctor.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

namespace {

DoctorCheck check(CheckStatus status) {
  return DoctorCheck{"c", status, "", ""};
}

}  // namespace

TEST_CASE("worst: fail over warn over ok; ok when there are none", "[unit][doctor]") {
  CHECK(worst({}) == CheckStatus::ok);
  CHECK(worst({check(CheckStatus::ok), check(CheckStatus::warn)}) == CheckStatus::warn);
  CHECK(worst({check(CheckStatus::fail), check(CheckStatus::warn)}) == CheckStatus::fail);
  CHECK(std::string(status_name(CheckStatus::warn)) == "warn");
}

TEST_CASE("the summary counts each status and says what it means", "[unit][doctor]") {
  CHECK(doctor_summary({check(CheckStatus::ok), check(CheckStatus::ok)}) ==
        "summary: 2 checks: 2 ok, 0 warnings, 0 failures; ready to build");
  CHECK(doctor_summary({check(CheckStatus::ok), check(CheckStatus::warn)}) ==
        "summary: 2 checks: 1 ok, 1 warnings, 0 failures; builds may work: see the hints above");
  CHECK(doctor_summary(
            {check(CheckStatus::fail), check(CheckStatus::warn), check(CheckStatus::fail)}) ==
        "summary: 3 checks: 0 ok, 1 warnings, 2 failures; fix the failures above before building");
}
