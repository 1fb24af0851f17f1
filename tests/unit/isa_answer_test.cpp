// `kbuild isa`'s answer, in process: real g++ builds kbuild's probes against
// a fake torch whose vec headers compile for every ISA.
#include <catch2/catch.hpp>
#include <filesystem>

#include "../support/test_support.hpp"
#include "kbuild/environment.hpp"
#include "run/isa_answer.hpp"
#include "site/isa.hpp"
#include "util/process.hpp"

using namespace kbuild;
using namespace kbuild_test;
using ordered_json = nlohmann::ordered_json;

namespace {

struct AnswerFixture {
  TempDir dir;
  std::string torch = dir / "torch";
  Environment env = Environment::from_process();

  explicit AnswerFixture(const std::string& version = "2.11.0") {
    make_fake_torch(torch, true);
    write_file(torch + "/version.py", "__version__ = '" + version + "'\n");
    const std::string vec = torch + "/include/ATen/cpu/vec/";
    fs::create_directories(vec);
    write_file(vec + "functional.h", "#pragma once\n");
    write_file(vec + "vec.h",
               "#pragma once\nnamespace at::vec { template <class T> struct Vectorized {\n"
               "  explicit Vectorized(T v) : v_(v) {}\n"
               "  Vectorized exp() const { return *this; }\n"
               "  void store(T* out) const { out[0] = v_; }\n  T v_; }; }\n");
    env.set("KBUILD_CACHE_DIR", dir / "cache");
    env.set("TMPDIR", dir.str());
    env.unset("ATEN_CPU_CAPABILITY");
    env.unset("KBUILD_REMOTE_CACHE");
  }

  IsaAnswer answer() const {
    IsaAnswerRequest request;
    request.site.torch_root = torch;
    request.site.python_include = dir / "python-include";
    request.site.python_libdir = dir / "python-lib";
    return isa_answer(request, env);
  }
};

}  // namespace

TEST_CASE("the answer: the valid list, the pick, and what they were computed for",
          "[unit][isa_answer]") {
  if (machine_name() != "x86_64") {
    WARN("the probes are x86's: skipped");
    return;
  }
  AnswerFixture f;
  IsaAnswer first = f.answer();
  const ordered_json& a = first.json;
  INFO(a.dump(2));
  REQUIRE_FALSE(a["valid"].empty());  // every x86-64 CPU this runs on has AVX2
  CHECK(a["pick"] == a["valid"][0]);
  CHECK(a["valid"].back()["inductor"] == "avx2");
  CHECK(a["certain"] == true);
  CHECK(a["probes_compiled"].get<int>() == static_cast<int>(a["checks"].size()));
  for (const ordered_json& check : a["checks"]) {
    CHECK(check["passed"] == true);
    CHECK_FALSE(check["flags"].get<std::string>().empty());
  }
  CHECK(a["compiler"]["configured"] == "g++");
  CHECK(a["compiler"]["path"] == fs::canonical(*find_executable("g++", f.env)).string());
  CHECK(a["compiler"]["version"].get<std::string>().find("g++") != std::string::npos);
  CHECK(a["torch"]["root"] == f.torch);
  CHECK(a["torch"]["version"] == "2.11.0");
  CHECK(a["torch"]["line"] == "2.11");
  CHECK(a["torch"]["profile"] == "2.11");
  CHECK(a["torch"]["profile_matches_line"] == true);
  CHECK(a["cpu"]["machine"] == "x86_64");
  CHECK(a["cpu"]["identity"].get<std::string>().size() == 40);
  CHECK(a["aten_cpu_capability"]["value"].is_null());
  CHECK(a["remote"]["url"].is_null());
  // A second answer compiles nothing and says the same.
  IsaAnswer second = f.answer();
  CHECK(second.json["probes_compiled"] == 0);
  CHECK(second.json["valid"] == a["valid"]);
  CHECK(second.json["checks"] == a["checks"]);
  CHECK(second.json["compiler"] == a["compiler"]);
}

TEST_CASE("a torch line without a profile of its own is said in the answer", "[unit][isa_answer]") {
  // 2.10: no release file was found, so it has no profile (2.9 stands in).
  AnswerFixture f("2.10.0");
  IsaAnswer a = f.answer();
  CHECK(a.json["torch"]["line"] == "2.10");
  CHECK(a.json["torch"]["profile"] == "2.9");
  CHECK(a.json["torch"]["profile_matches_line"] == false);
  CHECK_FALSE(a.notes.empty());
}

TEST_CASE("ATEN_CPU_CAPABILITY in the answer: its value, and whether it changed the pick",
          "[unit][isa_answer]") {
  if (machine_name() != "x86_64") {
    WARN("the probes are x86's: skipped");
    return;
  }
  AnswerFixture f;
  f.env.set("ATEN_CPU_CAPABILITY", "avx2");
  IsaAnswer a = f.answer();
  CHECK(a.json["aten_cpu_capability"]["value"] == "avx2");
  CHECK(a.json["pick"]["isa"] == "avx2");
  CHECK(a.json["aten_cpu_capability"]["changed_pick"] == (a.json["valid"].size() > 1));
  f.env.set("ATEN_CPU_CAPABILITY", "default");
  CHECK(f.answer().json["pick"].is_null());
  f.env.set("ATEN_CPU_CAPABILITY", "avx9");
  IsaAnswer unknown = f.answer();
  CHECK(unknown.json["aten_cpu_capability"]["known"] == false);
  CHECK(unknown.warnings.size() == 1);
}

TEST_CASE("the answer for a person names the pick, the list and what they are for",
          "[unit][isa_answer]") {
  AnswerFixture f;
  CHECK(isa_answer_lines(f.answer().json)[6].find(" compiled now") != std::string::npos);
  std::vector<std::string> lines = isa_answer_lines(f.answer().json);
  REQUIRE(lines.size() == 7);
  CHECK(lines[0].rfind("pick        ", 0) == 0);
  CHECK(lines[1].find("(Inductor's valid_vec_isa_list, best first)") != std::string::npos);
  CHECK(lines[2] == "ATEN_CPU_CAPABILITY  unset");
  CHECK(lines[4].find(f.torch + " (2.11.0, profile 2.11)") != std::string::npos);
  CHECK(lines[6].find("none compiled (cached answers)") != std::string::npos);
}
