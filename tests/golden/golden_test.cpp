// Golden tests: kbuild's assembled argv (and Inductor's command string) equal
// the commands measured from torch 2.11's Inductor, token for token.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"

using namespace kbuild;
using namespace kbuild_test;
using nlohmann::json;

namespace {

json load_golden(const std::string& name) {
  std::ifstream in(source_root() + "/tests/golden/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

// A fake machine: torch, Python and CUDA trees whose paths replace the
// placeholders of the golden data.
struct FakeMachine {
  TempDir dir;
  std::map<std::string, std::string> placeholders;
  Paths paths;
  Environment env;

  FakeMachine() {
    make_fake_torch(dir / "site-packages/torch", false);
    fs::create_directories(dir / "python/include/python3.12");
    fs::create_directories(dir / "python/lib");
    // CUDA as installed by NVIDIA: lib64 is a symlink into targets/.
    std::string real_lib = dir / "cuda/targets/x86_64-linux/lib";
    fs::create_directories(real_lib + "/stubs");
    fs::create_directories(dir / "cuda/include");
    write_file(real_lib + "/libcudart_static.a", "!<arch>\n");
    fs::create_directory_symlink("targets/x86_64-linux/lib", dir / "cuda/lib64");

    paths.torch_root = dir / "site-packages/torch";
    paths.python_include = dir / "python/include/python3.12";
    paths.python_libdir = dir / "python/lib";
    paths.cuda_home = dir / "cuda";
    paths.cuda_home_explicit = true;  // CUDA_HOME was set on the capture machine
    placeholders = {{"${CXX}", "/usr/bin/g++"},
                    {"${OUT_DIR}", dir / "out"},
                    {"${CACHE}", dir / "cache"},
                    {"${TORCH_ROOT}", *paths.torch_root},
                    {"${PYTHON_INCLUDE}", *paths.python_include},
                    {"${PYTHON_LIBDIR}", *paths.python_libdir},
                    {"${CUDA_HOME}", paths.cuda_home},
                    {"${CUDA_LIB}", fs::canonical(real_lib).string()}};
  }

  std::string subst(std::string s) const {
    // Longest placeholders first is unnecessary: none is a prefix of another.
    for (const auto& [from, to] : placeholders) {
      for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    }
    return s;
  }
  std::vector<std::string> subst_all(const json& argv) const {
    std::vector<std::string> out;
    for (const auto& a : argv) out.push_back(subst(a.get<std::string>()));
    return out;
  }
  ResolveContext context() const { return ResolveContext{paths, env}; }
};

Isa isa_from_spec(const std::string& spec) {
  CpuFeatures any_cpu{"x86_64", {}, 0};
  auto isa = parse_isa(spec, any_cpu, Environment{});
  REQUIRE(isa.has_value());
  return *isa;
}

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("builder_commands: every CppBuilder command line is reproduced token for token",
          "[golden]") {
  FakeMachine m;
  Registry registry;
  json golden = load_golden("builder_commands.json");
  int checked = 0;
  for (const auto& [key, value] : golden["commands"].items()) {
    DYNAMIC_SECTION(key) {
      BuildRequest r;
      r.compiler = "/usr/bin/g++";
      r.sources = {m.subst(std::string("${OUT_DIR}/kernel.cpp"))};
      if (key == "CppOptions") {
        r.use_torch = false;
        r.query.device_type = "cpu";
      } else if (key.rfind("CppTorchOptions", 0) == 0) {
        r.query.device_type = "cpu";
        r.isa = isa_from_spec("amx+bf16");  // the capture machine's pick
      } else {
        // "cuda|aot=True|compile_only=False|include_pytorch=True"
        r.query.device_type = key.substr(0, key.find('|'));
        r.query.aot_mode = key.find("aot=True") != std::string::npos;
        r.query.compile_only = key.find("compile_only=True") != std::string::npos;
      }
      r.kind = r.query.compile_only ? OutputKind::object : OutputKind::shared_library;
      if (value.contains("error")) {
        // xpu without a SYCL runtime: a provider error, never options.
        try {
          plan_build(r, registry, m.context());
          FAIL("expected a provider error for " << key);
        } catch (const Error& e) {
          CHECK(e.kind() == ErrorKind::provider);
          CHECK(std::string(e.what()).find("SYCL") != std::string::npos);
        }
      } else {
        BuildPlan plan = plan_build(r, registry, m.context());
        CHECK(plan.command.argv == m.subst_all(value["argv"]));
        CHECK(rtrim(plan.command.inductor_line) == m.subst(value["raw"].get<std::string>()));
        CHECK(plan.output == m.subst(value["target"].get<std::string>()));
      }
      ++checked;
    }
  }
  CHECK(checked >= 0);
}

TEST_CASE("builder_commands: the golden file covers cpu, cuda, mps and xpu in all four modes",
          "[golden]") {
  json golden = load_golden("builder_commands.json");
  for (std::string device : {"cpu", "cuda", "mps", "xpu"})
    for (std::string aot : {"False", "True"})
      for (std::string co : {"False", "True"})
        CHECK(golden["commands"].contains(device + "|aot=" + aot + "|compile_only=" + co +
                                          "|include_pytorch=False"));
}

TEST_CASE("device_options: the device hook's 7 lists match Inductor for every device and mode",
          "[golden]") {
  FakeMachine m;
  Registry registry;  // nothing registered: npu is unknown, as in torch 2.11
  json golden = load_golden("device_options.json");
  for (const auto& [key, expected] : golden["results"].items()) {
    DYNAMIC_SECTION(key) {
      // "cuda aot_mode=False compile_only=True"
      DeviceQuery q{key.substr(0, key.find(' ')), key.find("aot_mode=True") != std::string::npos,
                    key.find("compile_only=True") != std::string::npos};
      if (expected.is_string()) {
        CHECK_THROWS_AS(registry.resolve(q, m.context(), false), Error);
      } else {
        OptionsResult r = registry.resolve(q, m.context(), false);
        for (OptionList list : kAllOptionLists) {
          INFO(list_name(list));
          CHECK(r.options.values(list) == m.subst_all(expected[std::string(list_name(list))]));
        }
      }
    }
  }
}

TEST_CASE("inductor_real_commands: every command torch.compile and AOTInductor ran is reproduced",
          "[golden]") {
  FakeMachine m;
  Registry registry;
  json golden = load_golden("inductor_real_commands.json");
  REQUIRE(golden["commands"].size() >= 20);
  std::set<std::string> kinds_seen;
  for (std::size_t i = 0; i < golden["commands"].size(); ++i) {
    const json& cmd = golden["commands"][i];
    std::vector<std::string> expected = m.subst_all(cmd["argv"]);
    DYNAMIC_SECTION("command " << i << ": " << cmd["target"].get<std::string>()) {
      // The request is read off the measured command (its inputs: mode,
      // device, sources, pch); the whole argv is then compared.
      BuildRequest r;
      r.compiler = expected[0];
      bool pch = contains(expected, "-x");
      r.kind = contains(expected, "-E")   ? OutputKind::preprocessed
               : pch                      ? OutputKind::precompiled_header
               : contains(expected, "-c") ? OutputKind::object
                                          : OutputKind::shared_library;
      r.query.device_type = contains(expected, "USE_CUDA") ? "cuda" : "cpu";
      r.query.compile_only = r.kind == OutputKind::object;
      // AOT shows in the link line only: no torch_python.
      r.query.aot_mode =
          r.kind == OutputKind::shared_library && !contains(expected, "-ltorch_python");
      r.min_optimize = contains(expected, "-O1");
      r.isa = isa_from_spec(contains(expected, "-mamx-tile") ? "amx+bf16" : "none");
      std::size_t first = pch ? 3 : 1;
      for (std::size_t k = first;
           k < expected.size() && expected[k] != "-D" && expected[k][0] != '-'; ++k)
        r.sources.push_back(expected[k]);
      auto inc = std::find(expected.begin(), expected.end(), "-include");
      if (inc != expected.end()) r.include_pch = *(inc + 1);
      r.output = *(std::find(expected.begin(), expected.end(), "-o") + 1);

      BuildPlan plan = plan_build(r, registry, m.context());
      CHECK(plan.command.argv == expected);
      CHECK(rtrim(plan.command.inductor_line) == m.subst(cmd["raw"].get<std::string>()));
      kinds_seen.insert(std::to_string(static_cast<int>(r.kind)) + r.query.device_type +
                        (r.include_pch ? "+pch" : "") + (r.sources.size() > 1 ? "+multi" : ""));
    }
  }
}

TEST_CASE(
    "inductor_real_commands: the kinds covered include pch, preprocessing, objects, .S and "
    "multi-object links",
    "[golden]") {
  json golden = load_golden("inductor_real_commands.json");
  bool pch = false, pre = false, obj = false, asm_source = false, multi = false;
  for (const auto& cmd : golden["commands"]) {
    std::string raw = cmd["raw"];
    pch = pch || raw.find("-x c++-header") != std::string::npos;
    pre = pre || raw.find("-E -P") != std::string::npos;
    obj = obj || raw.find(" -c -o ") != std::string::npos;
    asm_source = asm_source || raw.find(".weights.S ") != std::string::npos;
    multi = multi || raw.find(".wrapper.o ") != std::string::npos;
  }
  CHECK(pch);
  CHECK(pre);
  CHECK(obj);
  CHECK(asm_source);
  CHECK(multi);
}
