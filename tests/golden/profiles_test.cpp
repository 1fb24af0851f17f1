// Golden tests per Inductor profile: `kbuild --dry-run` with a fake torch
// whose version.py names a release of the line reproduces that release's
// CppBuilder commands (tests/golden/profiles/<line>/builder_commands.json,
// produced by running the release's own cpp_builder.py), token for token,
// and Inductor's exact string (--inductor-line).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/in_process.hpp"
#include "../support/test_support.hpp"
#include "util/text.hpp"

using namespace kbuild_test;
using nlohmann::json;

namespace {

// `line` may name a subdirectory: "2.13/cpp_march-empty".
json load_profile_golden(const std::string& line) {
  std::ifstream in(source_root() + "/tests/golden/profiles/" + line + "/builder_commands.json");
  REQUIRE(in.good());
  return json::parse(in);
}

// A fake site: torch (version.py naming `release`), Python and CUDA trees.
struct ProfileMachine {
  TempDir home, dir;
  std::map<std::string, std::string> placeholders;

  explicit ProfileMachine(const std::string& release) {
    make_fake_torch(dir / "site-packages/torch", false);
    write_file(dir / "site-packages/torch/version.py",
               "__version__ = '" + release + "'\nhip: Optional[str] = None\n");
    fs::create_directories(dir / "python/include/python3.12");
    fs::create_directories(dir / "python/lib");
    fs::create_directories(dir / "out");
    write_file(dir / "out/kernel.cpp", "int f() { return 1; }\n");
    std::string real_lib = dir / "cuda/targets/x86_64-linux/lib";
    fs::create_directories(real_lib + "/stubs");
    fs::create_directories(dir / "cuda/include");
    write_file(real_lib + "/libcudart_static.a", "!<arch>\n");
    fs::create_directory_symlink("targets/x86_64-linux/lib", dir / "cuda/lib64");
    placeholders = {{"${CXX}", "g++"},
                    {"${OUT_DIR}", dir / "out"},
                    {"${TORCH_ROOT}", dir / "site-packages/torch"},
                    {"${PYTHON_INCLUDE}", dir / "python/include/python3.12"},
                    {"${PYTHON_LIBDIR}", dir / "python/lib"},
                    {"${CUDA_HOME}", dir / "cuda"},
                    {"${CUDA_LIB}", fs::canonical(real_lib).string()}};
  }
  std::string subst(std::string s) const {
    for (const auto& [from, to] : placeholders)
      for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    return s;
  }
  std::vector<std::string> subst_all(const json& argv) const {
    std::vector<std::string> out;
    for (const auto& a : argv) out.push_back(subst(a.get<std::string>()));
    return out;
  }
};

struct Request {
  std::string device = "cpu";
  bool aot = false, compile_only = false, min_optimize = false;
  std::string isa = "none";
  std::string cxx = "g++";
  std::map<std::string, std::string> env;
  std::vector<std::string> extra;  // more kbuild arguments
  std::string output;              // "": kernel.so, kernel.o with compile_only
};

// Runs kbuild --dry-run and --dry-run --inductor-line for `r`.
std::pair<RunResult, RunResult> dry_run(const ProfileMachine& m, const Request& r) {
  std::vector<std::string> args = {"--device",
                                   r.device,
                                   "--torch-root",
                                   m.placeholders.at("${TORCH_ROOT}"),
                                   "--python-include",
                                   m.placeholders.at("${PYTHON_INCLUDE}"),
                                   "--python-libdir",
                                   m.placeholders.at("${PYTHON_LIBDIR}"),
                                   "--cuda-home",
                                   m.placeholders.at("${CUDA_HOME}"),
                                   "--cxx",
                                   r.cxx,
                                   "--isa",
                                   r.isa,
                                   "--dry-run",
                                   "--no-cache",
                                   m.subst("${OUT_DIR}/kernel.cpp"),
                                   "-o",
                                   m.subst(!r.output.empty() ? r.output
                                           : r.compile_only  ? "${OUT_DIR}/kernel.o"
                                                             : "${OUT_DIR}/kernel.so")};
  if (r.aot) args.push_back("--aot");
  if (r.compile_only) args.push_back("--compile-only");
  if (r.min_optimize) args.push_back("--min-optimize");
  args.insert(args.end(), r.extra.begin(), r.extra.end());
  std::vector<std::string> unset = {"AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION",
                                    "ATEN_CPU_CAPABILITY", "CUDA_HOME", "CXX",
                                    "TORCHINDUCTOR_CPP_MARCH"};
  for (const auto& [name, value] : r.env)
    unset.erase(std::remove(unset.begin(), unset.end(), name), unset.end());
  RunResult argv = run_kbuild_in_process(args, m.home.str(), r.env, unset);
  args.push_back("--inductor-line");
  RunResult line = run_kbuild_in_process(args, m.home.str(), r.env, unset);
  return {argv, line};
}

std::string trim_line_end(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

void check_command(const ProfileMachine& m, const Request& r, const json& expected) {
  auto [dry, line] = dry_run(m, r);
  INFO("stderr: " << dry.err);
  REQUIRE(dry.exit_code == 0);
  auto argv = kbuild::shell_split(dry.out.substr(0, dry.out.find('\n')));
  REQUIRE(argv.has_value());
  CHECK(*argv == m.subst_all(expected["argv"]));
  REQUIRE(line.exit_code == 0);
  CHECK(trim_line_end(line.out) == trim_line_end(m.subst(expected["raw"].get<std::string>())));
}

// "cuda|aot=True|compile_only=False|include_pytorch=False" -> the request.
Request request_of(const std::string& key) {
  Request r;
  r.device = key.substr(0, key.find('|'));
  r.aot = key.find("aot=True") != std::string::npos;
  r.compile_only = key.find("compile_only=True") != std::string::npos;
  return r;
}

// Every line with golden data and the release its fake torch names.
const std::pair<const char*, const char*> kLines[] = {
    {"2.6", "2.6.0+cpu"},   {"2.7", "2.7.1+cu118"},   {"2.8", "2.8.0"},
    {"2.9", "2.9.1+cu130"}, {"2.11", "2.11.0+cu130"}, {"2.12", "2.12.0"},
    {"2.13", "2.13.0+cpu"}, {"2.14", "2.14.1"}};

}  // namespace

TEST_CASE("profiles: cpu and cuda in every mode, ISA none, are each line's command",
          "[golden][profiles]") {
  for (const auto& [line, release] : kLines) {
    DYNAMIC_SECTION("line " << line) {
      ProfileMachine m(release);
      json golden = load_profile_golden(line);
      int checked = 0;
      for (const auto& [key, value] : golden["commands"].items()) {
        if (key.rfind("cpu|", 0) != 0 && key.rfind("cuda|", 0) != 0) continue;
        if (key.find("include_pytorch=False") == std::string::npos) continue;
        INFO(line << " " << key);
        check_command(m, request_of(key), value);
        ++checked;
      }
      CHECK(checked == 8);
    }
  }
}

TEST_CASE("profiles: the ISA variants (avx2, avx512, amx) are each line's command",
          "[golden][profiles]") {
  for (const auto& [line, release] : kLines) {
    DYNAMIC_SECTION("line " << line) {
      ProfileMachine m(release);
      json golden = load_profile_golden(line);
      int checked = 0;
      for (const char* isa : {"avx2", "avx512", "amx"}) {
        for (const auto& [key, value] : golden["variants"].items()) {
          std::string prefix = std::string("isa=") + isa + "|";
          if (key.rfind(prefix, 0) != 0 || key.find("picked") != std::string::npos) continue;
          INFO(line << " " << key);
          Request r = request_of(key.substr(prefix.size()));
          // The measured host has avx512_bf16: Inductor adds -mavx512bf16 where the line has it.
          r.isa = std::string(isa) == "amx" ? "amx+bf16" : isa;
          check_command(m, r, value);
          ++checked;
        }
      }
      CHECK(checked == 24);
    }
  }
}

TEST_CASE("profiles: clang++ gets each line's ignored-optimization flag, and the env var",
          "[golden][profiles]") {
  for (const auto& [line, release] : kLines) {
    DYNAMIC_SECTION("line " << line) {
      ProfileMachine m(release);
      json golden = load_profile_golden(line);
      int checked = 0;
      for (const auto& [key, value] : golden["variants"].items()) {
        if (key.rfind("cxx=clang++", 0) != 0 || key.find("CppOptions") != std::string::npos)
          continue;
        INFO(line << " " << key);
        Request r = request_of(key.substr(key.find('|') + 1));
        r.cxx = "clang++";
        m.placeholders["${CXX}"] = "clang++";
        if (key.find("RAISE_ERROR_ON_IGNORED_OPTIMIZATION=0") != std::string::npos)
          r.env["AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION"] = "0";
        check_command(m, r, value);
        ++checked;
      }
      CHECK(checked == 8);
    }
  }
}

TEST_CASE("profiles: the C++ wrapper's -O1 and extra flags where the line has them",
          "[golden][profiles]") {
  for (const auto& [line, release] : kLines) {
    DYNAMIC_SECTION("line " << line) {
      ProfileMachine m(release);
      json golden = load_profile_golden(line);
      for (const char* co : {"False", "True"}) {
        const json& v =
            golden["variants"][std::string("wrapper-min-optimize|cpu|compile_only=") + co];
        if (v.contains("error")) continue;  // the release has no min_optimize (2.6)
        Request r;
        r.compile_only = std::string(co) == "True";
        r.min_optimize = true;
        check_command(m, r, v);
      }
      const json& extra = golden["variants"]["extra-flags|cpu"];
      Request r;
      r.extra = {"--extra-flags=-DX=1 -Wextra"};
      check_command(m, r, extra);
    }
  }
}

TEST_CASE("profiles: using a PCH, and preprocessing, where the line has them",
          "[golden][profiles]") {
  for (const auto& [line, release] :
       {std::pair{"2.8", "2.8.0"}, std::pair{"2.9", "2.9.1"}, std::pair{"2.11", "2.11.0"},
        std::pair{"2.12", "2.12.0"}, std::pair{"2.13", "2.13.0"}, std::pair{"2.14", "2.14.1"}}) {
    DYNAMIC_SECTION("line " << line) {
      ProfileMachine m(release);
      json golden = load_profile_golden(line);
      write_file(m.dir / "out/header.h", "#pragma once\n");
      Request use;
      use.compile_only = true;
      use.extra = {"--include-pch", m.subst("${OUT_DIR}/header.h")};
      check_command(m, use, golden["variants"]["pch-use|cpu|compile_only=True"]);

      // --preprocess writes kernel.i (the golden target), not kernel.so.
      Request pre;
      pre.extra = {"--preprocess"};
      pre.output = "${OUT_DIR}/kernel.i";
      check_command(m, pre, golden["variants"]["preprocess|cpu"]);
    }
  }
}

TEST_CASE(
    "profiles: a release picks its line; a line without a profile the nearest older, said once",
    "[golden][profiles]") {
  json g26 = load_profile_golden("2.6"), g29 = load_profile_golden("2.9"),
       g214 = load_profile_golden("2.14");
  const std::string key = "cpu|aot=False|compile_only=False|include_pytorch=False";
  struct Pick {
    const char* release;
    const json* expected;
    const char* note;  // in stderr, "" for none
  };
  for (const Pick& p :
       {Pick{"2.6.3+cu124", &g26, ""}, Pick{"2.9.1+cu130", &g29, ""}, Pick{"2.9.0+cpu", &g29, ""},
        Pick{"2.10.0", &g29, "using the nearest, 2.9"},
        Pick{"2.20.0", &g214, "is newer than every Inductor profile: profile 2.14 stands in"},
        Pick{"1.13.1", &g26, "using the nearest, 2.6"}}) {
    DYNAMIC_SECTION("torch " << p.release) {
      ProfileMachine m(p.release);
      auto [dry, line] = dry_run(m, Request{});
      INFO(dry.err);
      REQUIRE(dry.exit_code == 0);
      CHECK(kbuild::shell_split(dry.out.substr(0, dry.out.find('\n'))) ==
            std::optional(m.subst_all((*p.expected)["commands"][key]["argv"])));
      std::string note = p.note;
      if (note.empty()) {
        CHECK(dry.err.find("Inductor profile") == std::string::npos);
      } else {
        CHECK(dry.err.find(note) != std::string::npos);
        CHECK(dry.err.find(std::string("torch ") + p.release) != std::string::npos);
      }
    }
  }
}

TEST_CASE("profiles: --torch-version names the line over the torch found; --version names it",
          "[golden][profiles]") {
  ProfileMachine m("2.11.0");
  json g214 = load_profile_golden("2.14");
  Request r;
  r.extra = {"--torch-version", "2.14"};
  check_command(m, r, g214["commands"]["cpu|aot=False|compile_only=False|include_pytorch=False"]);

  RunResult v = run_kbuild_in_process({"--version"}, m.home.str(),
                                      {{"KBUILD_TORCH_ROOT", m.placeholders.at("${TORCH_ROOT}")}});
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("Inductor profile 2.11 (") != std::string::npos);
  CHECK(v.out.find("torch 2.11.0 from") != std::string::npos);
}

TEST_CASE("profiles: --no-torch uses the base layer of the named line", "[golden][profiles]") {
  ProfileMachine m("2.14.1");
  json g214 = load_profile_golden("2.14");
  RunResult r = run_kbuild_in_process(
      {"--no-torch", "--torch-version", "2.14", "--cxx", "g++", "--dry-run", "--no-cache",
       m.subst("${OUT_DIR}/kernel.cpp"), "-o", m.subst("${OUT_DIR}/kernel.so")},
      m.home.str(), {}, {"CXX"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(kbuild::shell_split(r.out.substr(0, r.out.find('\n'))) ==
        std::optional(m.subst_all(g214["commands"]["CppOptions"]["argv"])));
}

TEST_CASE(
    "profiles: 2.13 follows TORCHINDUCTOR_CPP_MARCH (a value, and empty), command for command",
    "[golden][profiles]") {
  // tests/golden/profiles/2.13/cpp_march-*: torch 2.13.0's cpp_builder.py run by the harness
  // with --env TORCHINDUCTOR_CPP_MARCH=x86-64-v3 and with the empty value.
  for (const auto& [dir, value] :
       {std::pair<const char*, const char*>{"cpp_march-x86-64-v3", "x86-64-v3"},
        {"cpp_march-empty", ""}}) {
    DYNAMIC_SECTION(dir) {
      ProfileMachine m("2.13.0+cpu");
      json golden = load_profile_golden(std::string("2.13/") + dir);
      int checked = 0;
      for (const auto& [key, expected] : golden["commands"].items()) {
        if (key.rfind("cpu|", 0) != 0 && key.rfind("cuda|", 0) != 0) continue;
        INFO(dir << " " << key);
        Request r = request_of(key);
        r.env = {{"TORCHINDUCTOR_CPP_MARCH", value}};
        check_command(m, r, expected);
        ++checked;
      }
      for (const char* isa : {"avx2", "avx512", "amx"}) {
        for (const auto& [key, expected] : golden["variants"].items()) {
          std::string prefix = std::string("isa=") + isa + "|";
          if (key.rfind(prefix, 0) != 0 || key.find("picked") != std::string::npos) continue;
          INFO(dir << " " << key);
          Request r = request_of(key.substr(prefix.size()));
          r.isa = std::string(isa) == "amx" ? "amx+bf16" : isa;
          r.env = {{"TORCHINDUCTOR_CPP_MARCH", value}};
          check_command(m, r, expected);
          ++checked;
        }
      }
      CHECK(checked == 16 + 24);
    }
  }
}

namespace {
// Occurrences of `what` in `text`.
std::size_t profiles_test_count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("profiles: --version, doctor and --report say the evidence the profile rests on",
          "[golden][profiles]") {
  struct Evidence {
    const char* release;
    const char* evidence;
  };
  for (const Evidence& e :
       {Evidence{"2.11.0+cu130", "evidence: measured"}, Evidence{"2.14.1", "evidence: executed"},
        Evidence{"2.13.0+cpu", "evidence: derived from release files"},
        Evidence{"2.10.0", "evidence: stand-in: profile 2.9"}}) {
    DYNAMIC_SECTION("torch " << e.release) {
      ProfileMachine m(e.release);
      const std::map<std::string, std::string> env = {
          {"KBUILD_TORCH_ROOT", m.placeholders.at("${TORCH_ROOT}")}};
      RunResult v = run_kbuild_in_process({"--version"}, m.home.str(), env);
      CHECK(v.exit_code == 0);
      CHECK(v.out.find(e.evidence) != std::string::npos);
      RunResult d = run_kbuild_in_process(
          {"doctor", "--torch-root", m.placeholders.at("${TORCH_ROOT}")}, m.home.str(), env);
      INFO(d.out << d.err);
      CHECK(d.out.find(e.evidence) != std::string::npos);
      Request r;
      const std::string report = m.subst("${OUT_DIR}/report.json");
      r.extra = {"--report", report};
      auto [dry, line] = dry_run(m, r);
      (void)line;
      REQUIRE(dry.exit_code == 0);
      std::ifstream in(report);
      if (in.good()) {
        json j = json::parse(in);
        CHECK(j["profile"]["evidence"].get<std::string>().find(
                  std::string(e.evidence).substr(10)) == 0);
      } else {
        FAIL("no report written: " << dry.err);
      }
    }
  }
}

TEST_CASE(
    "profiles: torch 2.15 (no release file) gets 2.14, and a torch newer than every "
    "profile is warned about once",
    "[golden][profiles]") {
  json g214 = load_profile_golden("2.14");
  for (const char* release : {"2.15.0", "2.16.0+cu130"}) {
    DYNAMIC_SECTION("torch " << release) {
      ProfileMachine m(release);
      Request r;
      check_command(m, r,
                    g214["commands"]["cpu|aot=False|compile_only=False|include_pytorch=False"]);
      auto [dry, line] = dry_run(m, r);
      (void)line;
      INFO(dry.err);
      CHECK(profiles_test_count(dry.err, "newer than every Inductor profile") == 1);
      CHECK(profiles_test_count(dry.err, "2.14 stands in") == 1);
      RunResult v = run_kbuild_in_process(
          {"--version"}, m.home.str(), {{"KBUILD_TORCH_ROOT", m.placeholders.at("${TORCH_ROOT}")}});
      CHECK(v.out.find("evidence: stand-in: profile 2.14") != std::string::npos);
    }
  }
}
