// `kbuild --isa auto` as Inductor picks: the CPU's best ISA whose probe
// builds with the compiler and torch's headers (issue 15, item 5).
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

bool cpu_has_avx512() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512f") != std::string::npos &&
             line.find(" avx512bw") != std::string::npos && line.find(" avx2") != std::string::npos;
  return false;
}

// A fake torch whose ATen vec headers hold `avx512_exp` as Vectorized's
// exp() when CPU_CAPABILITY_AVX512 is defined.
void make_torch_with_vec(const std::string& torch, const std::string& avx512_exp) {
  make_fake_torch(torch, true);
  const std::string vec = torch + "/include/ATen/cpu/vec/";
  fs::create_directories(vec);
  write_file(vec + "functional.h", "#pragma once\n");
  write_file(vec + "vec.h",
             "#pragma once\nextern \"C\" float kbuild_test_sleef_expf16(float);\n"
             "namespace at::vec { template <class T> struct Vectorized {\n"
             "  explicit Vectorized(T v) : v_(v) {}\n"
             "#ifdef CPU_CAPABILITY_AVX512\n" +
                 avx512_exp +
                 "\n#else\n"
                 "  Vectorized exp() const { return *this; }\n"
                 "#endif\n"
                 "  void store(T* out) const { out[0] = v_; }\n  T v_; }; }\n");
}

}  // namespace

TEST_CASE("--isa auto drops an ISA whose probe does not build with torch's headers", "[e2e][isa]") {
  if (!cpu_has_avx512()) {
    WARN("this CPU has no AVX512: nothing to drop");
    return;
  }
  TempDir dir;
  const std::string torch = dir / "torch";
  // A torch built without Sleef's AVX512 header: its vec headers fail for AVX512.
  make_torch_with_vec(torch, "#error sleef.h: No such file");
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  std::vector<std::string> args = {"--torch-root", torch,         "--dry-run", "-v",        "--cxx",
                                   "g++",          dir / "k.cpp", "-o",        dir / "k.so"};
  RunResult r = run_kbuild(args, dir / "home", {{"TMPDIR", dir.str()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("-D CPU_CAPABILITY_AVX2") != std::string::npos);
  CHECK(r.out.find("-mavx2 -mfma -mf16c") != std::string::npos);
  CHECK(r.out.find("avx512") == std::string::npos);
  CHECK(r.err.find("probes do not build or load with g++") != std::string::npos);
  // The answers are cached: the same plan again, without building a probe.
  RunResult again = run_kbuild(args, dir / "home", {{"TMPDIR", dir.str()}});
  CHECK(again.out == r.out);
  CHECK(fs::exists(dir / "home"));
}

TEST_CASE("--isa auto drops an ISA whose probe builds but does not load, as Inductor",
          "[e2e][isa]") {
  if (!cpu_has_avx512()) {
    WARN("this CPU has no AVX512: nothing to drop");
    return;
  }
  // Debian sid's torch 2.14.1 with libsleef-dev: the AVX512 probe builds but
  // needs a Sleef symbol no library it links gives it, so Inductor's
  // check_build fails to load it and uses the next ISA down.
  TempDir dir;
  const std::string torch = dir / "torch";
  make_torch_with_vec(
      torch, "  Vectorized exp() const { return Vectorized(kbuild_test_sleef_expf16(v_)); }");
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  RunResult r = run_kbuild(
      {"--torch-root", torch, "--dry-run", "--cxx", "g++", dir / "k.cpp", "-o", dir / "k.so"},
      dir / "home", {{"TMPDIR", dir.str()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("-D CPU_CAPABILITY_AVX2") != std::string::npos);
  CHECK(r.out.find("avx512") == std::string::npos);
  CHECK(r.err.find("probes do not build or load with g++") != std::string::npos);
}

namespace {

bool cpu_has_vnni_without_amx() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" avx512_vnni") != std::string::npos &&
             line.find(" amx_tile") == std::string::npos;
  return false;
}

// A torch of `version` whose vec headers build for every ISA.
std::string fake_torch(const TempDir& dir, const std::string& version) {
  const std::string torch = dir / ("torch-" + version);
  make_torch_with_vec(torch, "  Vectorized exp() const { return *this; }");
  write_file(torch + "/version.py", "__version__ = '" + version + "'\n");
  return torch;
}

}  // namespace

TEST_CASE("--isa auto with torch 2.6 on a VNNI host takes AVX512, as Inductor 2.6 (no VNNI class)",
          "[e2e][isa]") {
  if (!cpu_has_vnni_without_amx()) {
    WARN("this CPU has no AVX512-VNNI (or has AMX): nothing to check");
    return;
  }
  TempDir dir;
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  for (const char* version : {"2.6.0", "2.9.1"}) {
    INFO(version);
    RunResult r = run_kbuild({"--torch-root", fake_torch(dir, version), "--dry-run", "--cxx", "g++",
                              dir / "k.cpp", "-o", dir / "k.so"},
                             dir / "home", {{"TMPDIR", dir.str()}});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    // Before: the avx512_vnni pick, which these lines have no flags for: no ISA at all.
    CHECK(r.out.find("-D CPU_CAPABILITY_AVX512") != std::string::npos);
    CHECK(r.out.find("-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma") != std::string::npos);
    CHECK(r.out.find("-mavx512vnni") == std::string::npos);
  }
}

TEST_CASE("kbuild isa: Inductor's valid ISAs and pick, and what they were computed for",
          "[e2e][isa]") {
  TempDir dir;
  const std::string torch = fake_torch(dir, "2.11.0");
  const std::vector<std::string> args = {
      "isa",      "--json",          "--torch-root", torch, "--cxx", "g++", "--python-include",
      dir / "py", "--python-libdir", dir / "py"};
  RunResult r = run_kbuild(args, dir / "home", {{"TMPDIR", dir.str()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json a = nlohmann::json::parse(r.out);
  REQUIRE_FALSE(a["valid"].empty());
  CHECK(a["pick"] == a["valid"][0]);
  CHECK(a["valid"].back()["class"] == "VecAVX2");
  CHECK(a["compiler"]["configured"] == "g++");
  CHECK(fs::path(a["compiler"]["path"].get<std::string>()).is_absolute());
  CHECK(a["torch"]["root"] == torch);
  CHECK(a["torch"]["profile_matches_line"] == true);
  CHECK(a["probes_compiled"].get<int>() > 0);
  if (cpu_has_vnni_without_amx()) {
    CHECK(a["pick"]["inductor"] == "avx512 avx512_vnni");
    CHECK(a["pick"]["flags"] ==
          "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512vnni -mavx512vl");
  }
  // Cached: nothing compiled, the same answer; ATEN_CPU_CAPABILITY=avx2 picks AVX2.
  RunResult again = run_kbuild(args, dir / "home", {{"ATEN_CPU_CAPABILITY", "avx2"}});
  REQUIRE(again.exit_code == 0);
  nlohmann::json b = nlohmann::json::parse(again.out);
  CHECK(b["probes_compiled"] == 0);
  CHECK(b["valid"] == a["valid"]);
  CHECK(b["pick"]["isa"] == "avx2");
  CHECK(b["aten_cpu_capability"]["value"] == "avx2");
  CHECK(b["aten_cpu_capability"]["changed_pick"] == (a["valid"].size() > 1));
  // For a person: one line per fact.
  std::vector<std::string> plain(args.begin() + 2, args.end());
  plain.insert(plain.begin(), "isa");
  RunResult text = run_kbuild(plain, dir / "home");
  CHECK(text.exit_code == 0);
  CHECK(text.out.rfind("pick        " + a["pick"]["isa"].get<std::string>(), 0) == 0);
  CHECK(text.out.find("\ntorch       " + torch + " (2.11.0, profile 2.11)") != std::string::npos);
}
