// Golden tests: inside a torch_npu process. Every case measured with
// torch_npu's own code on torch 2.11 (torch_npu_commands.json: 2.11.0.post1;
// torch_npu_2.12_commands.json: 2.12.0 and master), the 2.11.0.post2 cases
// derived by hand from the reference's description (torch_npu_post2_cases.json)
// and the releases derived from their source (torch_npu_derived_releases.json:
// 2.12.0.post1, 2.12.0.post2, 2.13.0), reproduced by `kbuild --device npu`
// and `kbuild --device cpu --plugin npu`: the argv token for token, and
// `options --json` equal to the 7-tuple key by key in tuple order.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/in_process.hpp"
#include "../support/test_support.hpp"
#include "util/text.hpp"

using namespace kbuild_test;
using nlohmann::json;

namespace {

json load_npu_golden(const std::string& name) {
  std::ifstream in(source_root() + "/tests/golden/" + name);
  REQUIRE(in.good());
  return json::parse(in);
}

const char* const kTupleOrder[] = {"definitions",    "include_dirs", "cflags",          "ldflags",
                                   "libraries_dirs", "libraries",    "passthrough_args"};

// A machine with torch, torch_npu (of one release) and an Ascend toolkit
// whose paths replace the placeholders of the golden data.
struct NpuMachine {
  TempDir home, dir;
  std::map<std::string, std::string> placeholders;

  explicit NpuMachine(const std::string& release, const std::string& torch = "") {
    make_fake_torch(dir / "site-packages/torch", false);
    if (!torch.empty())
      write_file(dir / "site-packages/torch/version.py", "__version__ = '" + torch + "'\n");
    fs::create_directories(dir / "site-packages/torch_npu/lib");
    write_file(dir / "site-packages/torch_npu/version.py",
               "__version__ = '" + release + "'\ngit_version = 'abc'\n");
    fs::create_directories(dir / "ascend/latest");
    fs::create_directories(dir / "python/include");
    fs::create_directories(dir / "python/lib");
    // A dry run checks the source and the output directory, as a build does.
    fs::create_directories(dir / "out");
    write_file(dir / "out/kernel.cpp", "int f() { return 1; }\n");
    placeholders = {{"${CXX}", "g++"},
                    {"${OUT_DIR}", dir / "out"},
                    {"${TORCH_ROOT}", dir / "site-packages/torch"},
                    {"${TORCH_NPU_ROOT}", dir / "site-packages/torch_npu"},
                    {"${ASCEND_HOME_PATH}", dir / "ascend/latest"},
                    {"${PYTHON_INCLUDE}", dir / "python/include"},
                    {"${PYTHON_LIBDIR}", dir / "python/lib"}};
  }
  std::string subst(std::string s) const {
    for (const auto& [from, to] : placeholders)
      for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    return s;
  }
  std::vector<std::string> subst_all(const json& list) const {
    std::vector<std::string> out;
    for (const auto& a : list) out.push_back(subst(a.get<std::string>()));
    return out;
  }
};

// One case key:
// "v2.11.0|triton|ascend=True|libtorch_npu_path=False|npu|aot=False|co=False|isa=picked".
struct Case {
  std::string state, device;
  bool ascend, libtorch_npu_path, aot, compile_only, isa_picked;
  explicit Case(const std::string& key) {
    std::vector<std::string> f;
    for (std::size_t from = 0, bar;; from = bar + 1) {
      bar = key.find('|', from);
      f.push_back(key.substr(from, bar - from));
      if (bar == std::string::npos) break;
    }
    REQUIRE(f.size() == 8);
    state = f[1];
    device = f[4];
    ascend = f[2] == "ascend=True";
    libtorch_npu_path = f[3] == "libtorch_npu_path=True";
    aot = f[5] == "aot=True";
    compile_only = f[6] == "co=True";
    isa_picked = f[7] == "isa=picked";
  }
};

// The release a machine has: what its torch_npu/version.py says, the
// variables that name it (KBUILD_TORCH_NPU_RELEASE), and the backends that
// patch nothing in it (the "upstream" state).
struct Release {
  std::string version_py;
  std::map<std::string, std::string> env;
  std::vector<std::string> upstream;
  // torch's version.py; empty: the fake torch's 2.11.0
  std::string torch = "";
  // Upstream Inductor before 2.11 returns torch's include dirs from the device
  // hook too; kbuild's `options --json` leaves them to the torch layer (the
  // argv is the same): in the upstream state, include_dirs is not compared.
  bool upstream_hook_includes = false;
};

// How the process chose its backend for the "upstream" state: each backend
// that patches nothing, by option and (the second, or the only one both
// ways) by variable.
struct BackendChoice {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
};
std::vector<BackendChoice> backend_choices(const std::string& state, const Release& release) {
  if (state != "upstream") return {{{}, {}}, {{"--backend", "triton"}, {}}};
  std::vector<BackendChoice> out;
  for (std::size_t i = 0; i < release.upstream.size(); ++i) {
    const std::string& backend = release.upstream[i];
    if (i == 1 || release.upstream.size() == 1)
      out.push_back({{}, {{"TORCHINDUCTOR_NPU_BACKEND", backend}}});
    if (i != 1) out.push_back({{"--backend", backend}, {}});
  }
  return out;
}

// For INFO lines: how the backend was chosen.
std::string shell_join_for_info(const BackendChoice& b) {
  std::string s = kbuild::shell_join(b.args);
  for (const auto& [k, v] : b.env) s += " " + k + "=" + v;
  return s.empty() ? "the default backend" : s;
}

std::vector<std::string> common_args(const NpuMachine& m, const Case& c) {
  std::vector<std::string> a = {"--device",         c.device,
                                "--torch-root",     m.placeholders.at("${TORCH_ROOT}"),
                                "--torch-npu-root", m.placeholders.at("${TORCH_NPU_ROOT}"),
                                "--python-include", m.placeholders.at("${PYTHON_INCLUDE}"),
                                "--python-libdir",  m.placeholders.at("${PYTHON_LIBDIR}")};
  if (c.device == "cpu") a.insert(a.end(), {"--plugin", "npu"});
  if (c.aot) a.push_back("--aot");
  if (c.compile_only) a.push_back("--compile-only");
  return a;
}

std::map<std::string, std::string> environment(const NpuMachine& m, const Case& c,
                                               const BackendChoice& b, const Release& release) {
  std::map<std::string, std::string> env = b.env;
  env.insert(release.env.begin(), release.env.end());
  if (c.ascend) env["ASCEND_HOME_PATH"] = m.placeholders.at("${ASCEND_HOME_PATH}");
  if (c.libtorch_npu_path) env["LIBTORCH_NPU_PATH"] = "/opt/libtorch_npu/lib";
  if (c.state == "triton-noaoti") env["DISABLE_AOTI_PATCH"] = "1";
  return env;
}

// The variables the case does not set are unset, whatever the test's environment has.
std::vector<std::string> unset_vars(const std::map<std::string, std::string>& env) {
  std::vector<std::string> unset;
  for (const char* var : {"DISABLE_AOTI_PATCH", "TORCHINDUCTOR_NPU_BACKEND", "ASCEND_HOME_PATH",
                          "LIBTORCH_NPU_PATH", "KBUILD_TORCH_NPU_RELEASE"})
    if (!env.count(var)) unset.push_back(var);
  return unset;
}

// Runs every case of `cases` through the kbuild binary on a machine with `release`.
int check_cases(const json& cases, const Release& release) {
  NpuMachine m(release.version_py, release.torch);
  int checked = 0;
  for (const auto& [key, expected] : cases.items()) {
    Case c(key);
    for (const BackendChoice& b : backend_choices(c.state, release)) {
      INFO(key << " with " << shell_join_for_info(b) << " (version.py " << release.version_py
               << ")");
      std::vector<std::string> args = common_args(m, c);
      args.insert(args.end(), b.args.begin(), b.args.end());
      auto env = environment(m, c, b, release);
      auto unset = unset_vars(env);

      std::vector<std::string> build = args;
      // The compiler and the ISA choose the build's flags; `options` takes neither.
      build.insert(build.end(), {"--cxx", "g++", "--isa", c.isa_picked ? "amx+bf16" : "none"});
      build.insert(build.end(),
                   {"--dry-run", m.subst("${OUT_DIR}/kernel.cpp"), "-o",
                    m.subst(c.compile_only ? "${OUT_DIR}/kernel.o" : "${OUT_DIR}/kernel.so")});
      RunResult dry = run_kbuild_in_process(build, m.home.str(), env, unset);
      std::vector<std::string> options = {"options", "--json"};
      options.insert(options.end(), args.begin(), args.end());
      RunResult opt = run_kbuild_in_process(options, m.home.str(), env, unset);
      INFO("dry-run stderr: " << dry.err << "\noptions stderr: " << opt.err);
      // The release is one kbuild knows: no note that it reproduces another.
      CHECK(dry.err.find("is not a release kbuild knows") == std::string::npos);

      if (expected.contains("error")) {
        // "RuntimeError: Could not find ASCEND_HOME_PATH in env. ..." : exit 4, that message.
        std::string message = expected["error"].get<std::string>();
        message = message.substr(message.find(": ") + 2);
        for (const RunResult* r : {&dry, &opt}) {
          CHECK(r->exit_code == 4);
          CHECK(r->err.find("kbuild: error[provider]: ") != std::string::npos);
          CHECK(r->err.find(message) != std::string::npos);
        }
      } else {
        REQUIRE(dry.exit_code == 0);
        auto argv = kbuild::shell_split(dry.out.substr(0, dry.out.find('\n')));
        REQUIRE(argv.has_value());
        CHECK(*argv == m.subst_all(expected["argv"]));

        REQUIRE(opt.exit_code == 0);
        nlohmann::ordered_json tuple = nlohmann::ordered_json::parse(opt.out);
        REQUIRE(tuple.size() == 7);
        std::size_t i = 0;
        for (const auto& [name, values] : tuple.items()) {
          CHECK(name == kTupleOrder[i]);
          if (!(release.upstream_hook_includes && c.state == "upstream" && i == 1))
            CHECK(m.subst_all(values) == m.subst_all(expected["options"][i]));
          ++i;
        }
      }
      ++checked;
    }
  }
  return checked;
}

const Release k2110post1{"2.11.0.post1", {}, {"mlir", "dvm", "ascendc"}};
const Release k2120{"2.12.0", {}, {"mlir"}};
// A master build says the torch it was built for (tools/setup_helpers/version.py):
// on the measured machine's torch 2.11, "2.11.0+git<sha>"; only the variable names it.
const Release kMaster{"2.11.0+git9e73e70",
                      {{"KBUILD_TORCH_NPU_RELEASE", "master"}},
                      {"mlir", "dvm", "ascendc", "triton_experimental"}};

// The cases of `golden` whose key starts with `tag|`.
json cases_of(const json& golden, const std::string& tag) {
  json out = json::object();
  for (const auto& [key, value] : golden["cases"].items())
    if (key.rfind(tag + "|", 0) == 0) out[key] = value;
  return out;
}

}  // namespace

TEST_CASE("torch_npu 2.11.0.post1: all 192 measured cases, argv and options --json", "[golden]") {
  json golden = load_npu_golden("torch_npu_commands.json");
  REQUIRE(golden["cases"].size() == 192);
  // 64 triton and 64 triton-noaoti cases run with the default backend and
  // with --backend triton; 64 upstream cases with mlir, dvm and ascendc.
  CHECK(check_cases(golden["cases"], k2110post1) == 128 * 2 + 64 * 3);
}

TEST_CASE("torch_npu 2.11.0.post2: the hand-written cases of the second release", "[golden]") {
  // Its loader has mlir besides the default (v2.11.0-26.1.0 __init__.py:150-153).
  CHECK(check_cases(load_npu_golden("torch_npu_post2_cases.json")["cases"],
                    Release{"2.11.0.post2", {}, {"mlir"}}) > 0);
}

TEST_CASE("torch_npu 2.12.0: all 192 measured cases, argv and options --json", "[golden]") {
  json cases = cases_of(load_npu_golden("torch_npu_2.12_commands.json"), "v26.1.0-pytorch2.12.0");
  REQUIRE(cases.size() == 192);
  // The upstream state with mlir, its only backend besides the default,
  // by option and by variable.
  CHECK(check_cases(cases, k2120) == 128 * 2 + 64 * 2);
}

TEST_CASE("torch_npu master: all 192 measured cases, named by KBUILD_TORCH_NPU_RELEASE",
          "[golden]") {
  json cases = cases_of(load_npu_golden("torch_npu_2.12_commands.json"), "master");
  REQUIRE(cases.size() == 192);
  CHECK(check_cases(cases, kMaster) == 128 * 2 + 64 * 4);
}

TEST_CASE("torch_npu master: a version file of the master line names it without the variable",
          "[golden]") {
  // A master build for torch 2.14 or 2.15 (the versions its version.txt lists past 2.13).
  const json master = cases_of(load_npu_golden("torch_npu_2.12_commands.json"), "master");
  json cases = json::object();
  for (const auto& [key, value] : master.items())
    if (key.find("|triton-noaoti|") != std::string::npos &&
        key.find("isa=none") != std::string::npos)
      cases[key] = value;
  REQUIRE(cases.size() == 32);
  CHECK(check_cases(cases, Release{"2.14.0+git9e73e70", {}, {}}) == 64);
  CHECK(check_cases(cases, Release{"2.15.0", {}, {}}) == 64);
}

TEST_CASE("torch_npu 2.12.0.post1, 2.12.0.post2, 2.13.0: the cases derived from their source",
          "[golden]") {
  json golden = load_npu_golden("torch_npu_derived_releases.json");
  REQUIRE(golden["releases"].size() == 3);
  for (const auto& [name, release] : golden["releases"].items()) {
    INFO("release " << name);
    REQUIRE(release["cases"].size() == 96);
    Release r{release["version_py"].get<std::string>(),
              {},
              release["upstream_backends"].get<std::vector<std::string>>()};
    const int upstream_runs = r.upstream.size() == 1 ? 2 : static_cast<int>(r.upstream.size());
    CHECK(check_cases(release["cases"], r) == 64 * 2 + 32 * upstream_runs);
  }
}

TEST_CASE("a backend a release lacks is refused as an unknown backend is", "[golden]") {
  // From each ref's _BACKEND_LOADERS (torch_npu/_inductor/__init__.py).
  const std::map<std::string, std::vector<std::string>> lacks = {
      {"2.11.0.post1", {"triton_experimental"}},
      {"2.11.0.post2", {"dvm", "ascendc", "triton_experimental"}},
      {"2.12.0", {"dvm", "ascendc", "triton_experimental"}},
      {"2.12.0.post1", {"triton_experimental"}},
      {"2.12.0.post2", {"dvm", "ascendc", "triton_experimental"}},
      {"2.13.0", {"ascendc", "triton_experimental"}},
      {"2.7.1.post9", {"ascendc", "triton_experimental"}},
      {"2.7.1.post10", {"ascendc", "triton_experimental"}},
      {"2.9.0.post7", {"triton_experimental"}},
      {"2.9.0.post8", {"ascendc", "triton_experimental"}},
      {"2.10.0.post5", {"triton_experimental"}}};
  for (const auto& [release, backends] : lacks) {
    NpuMachine m(release);
    for (const std::string& backend : backends) {
      INFO(release << " --backend " << backend);
      RunResult r = run_kbuild_in_process(
          {"options", "--device", "npu", "--torch-root", m.placeholders.at("${TORCH_ROOT}"),
           "--torch-npu-root", m.placeholders.at("${TORCH_NPU_ROOT}"), "--backend", backend},
          m.home.str(), {{"ASCEND_HOME_PATH", m.subst("${ASCEND_HOME_PATH}")}},
          {"KBUILD_TORCH_NPU_RELEASE", "TORCHINDUCTOR_NPU_BACKEND"});
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("kbuild: error[usage]: device 'npu' has no backend '" + backend +
                       "' in release " + release + " (its backends: ") != std::string::npos);
    }
  }
}

// torch_npu's older releases with their torch (torch_npu_old_releases.json,
// derived from the releases' source: see its README): keyed
// "2.7.1.post4|torch=2.7.1|npu|aot=False|co=False"; backend triton (the
// default), ASCEND_HOME_PATH set, g++, --isa none.
TEST_CASE("torch_npu 2.7.1 and 2.9.0: the older optimization flags on their torch's line",
          "[golden]") {
  json golden = load_npu_golden("torch_npu_old_releases.json");
  REQUIRE(golden["cases"].size() == 24);
  for (const auto& [key, expected] : golden["cases"].items()) {
    INFO(key);
    const std::string release = key.substr(0, key.find('|'));
    const std::size_t torch_at = key.find("torch=") + 6;
    const std::string torch = key.substr(torch_at, key.find('|', torch_at) - torch_at);
    const bool npu = key.find("|npu|") != std::string::npos;
    const bool aot = key.find("aot=True") != std::string::npos;
    const bool compile_only = key.find("co=True") != std::string::npos;

    NpuMachine m(release);
    write_file(m.placeholders.at("${TORCH_ROOT}") + "/version.py",
               "__version__ = '" + torch + "'\n");
    std::vector<std::string> args = {
        "--device",
        npu ? "npu" : "cpu",
        "--torch-root",
        m.placeholders.at("${TORCH_ROOT}"),
        "--torch-npu-root",
        m.placeholders.at("${TORCH_NPU_ROOT}"),
        "--python-include",
        m.placeholders.at("${PYTHON_INCLUDE}"),
        "--python-libdir",
        m.placeholders.at("${PYTHON_LIBDIR}"),
        "--cxx",
        "g++",
        "--isa",
        "none",
        "--dry-run",
        m.subst("${OUT_DIR}/kernel.cpp"),
        "-o",
        m.subst(compile_only ? "${OUT_DIR}/kernel.o" : "${OUT_DIR}/kernel.so")};
    if (!npu) args.insert(args.end(), {"--plugin", "npu"});
    if (aot) args.push_back("--aot");
    if (compile_only) args.push_back("--compile-only");
    RunResult dry = run_kbuild_in_process(
        args, m.home.str(), {{"ASCEND_HOME_PATH", m.placeholders.at("${ASCEND_HOME_PATH}")}},
        {"DISABLE_AOTI_PATCH", "TORCHINDUCTOR_NPU_BACKEND", "LIBTORCH_NPU_PATH"});
    INFO("stderr: " << dry.err);
    REQUIRE(dry.exit_code == 0);
    auto argv = kbuild::shell_split(dry.out.substr(0, dry.out.find('\n')));
    REQUIRE(argv.has_value());
    CHECK(*argv == m.subst_all(expected));
    // The release is one kbuild knows: no note that it reproduces another.
    CHECK(dry.err.find("is not a release kbuild knows") == std::string::npos);
    CHECK(dry.err.find("of a line kbuild does not know") == std::string::npos);
  }
}

// torch_npu refs executed by conformance/torch_npu_harness.py on the torch of
// their line (torch_npu_refs/README.md): one file per cpp_builder.py, the
// releases that share it named by their version files.
namespace {
struct TorchNpuExecutedRef {
  std::string file;
  std::vector<Release> releases;
};
}  // namespace

TEST_CASE("torch_npu refs executed on their torch line: every case, argv and options --json",
          "[golden]") {
  const std::vector<std::string> master_backends = {"mlir", "dvm", "ascendc",
                                                    "triton_experimental"};
  const std::vector<TorchNpuExecutedRef> refs = {
      // master's cpp_builder: tag compatibility_release-pytorch2.13.0 (version.txt 2.14.0)
      // and tag v26.2.0-beta.1-pytorch2.13.0 (master's version list), on torch 2.13.
      {"v26.2.0-beta.1-pytorch2.13.0",
       {{"2.14.0", {}, master_backends, "2.13.0"},
        {"2.13.0+git94c0533",
         {{"KBUILD_TORCH_NPU_RELEASE", "master"}},
         master_backends,
         "2.13.0"}}},
      {"v26.2.0-beta.1-pytorch2.12.0",
       {{"2.12.0.post1", {}, {"mlir", "dvm", "ascendc"}, "2.12.0"}}},
      {"v2.12.0-26.1.0", {{"2.12.0.post2", {}, {"mlir"}, "2.12.0"}}},
      // executed on the GPU machine's torch 2.11.0+cu130 (--installed)
      {"v2.11.0-26.1.0", {{"2.11.0.post2", {}, {"mlir"}, "2.11.0"}}},
      {"v26.1.0-pytorch2.12.0", {{"2.12.0", {}, {"mlir"}, "2.12.0"}}},
      // the same cpp_builder on the 2.9 and 2.10 beta tags; torch 2.10 has the 2.9 profile
      {"v26.2.0-beta.1-pytorch2.9.0",
       {{"2.9.0.post7", {}, {"mlir", "dvm", "ascendc"}, "2.9.1", true},
        {"2.10.0.post5", {}, {"mlir", "dvm", "ascendc"}, "2.10.0", true}}},
      {"v2.9.0-26.1.0", {{"2.9.0.post8", {}, {"mlir", "dvm"}, "2.9.1", true}}},
      {"v26.2.0-beta.1-pytorch2.7.1", {{"2.7.1.post9", {}, {"mlir", "dvm"}, "2.7.1", true}}},
      {"v2.7.1-26.1.0", {{"2.7.1.post10", {}, {"mlir", "dvm"}, "2.7.1", true}}},
  };
  for (const TorchNpuExecutedRef& ref : refs) {
    const json golden = load_npu_golden("torch_npu_refs/" + ref.file + ".json");
    REQUIRE(golden["cases"].size() == 192);
    for (const Release& release : ref.releases) {
      INFO(ref.file << " as torch_npu " << release.version_py << " on torch " << release.torch);
      const int upstream_runs =
          release.upstream.size() == 1 ? 2 : static_cast<int>(release.upstream.size());
      CHECK(check_cases(golden["cases"], release) == 128 * 2 + 64 * upstream_runs);
    }
  }
}
