// Golden tests: inside a torch_npu process. Every case measured with
// torch_npu 2.11.0.post1's own code on torch 2.11 (torch_npu_commands.json),
// and the 2.11.0.post2 cases derived by hand from the reference's description
// (torch_npu_post2_cases.json), reproduced by `kbuild --device npu` and
// `kbuild --device cpu --plugin npu`: the argv token for token, and
// `options --json` equal to the 7-tuple key by key in tuple order.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"
#include "kbuild/shell.hpp"

using namespace kbuild_test;
using nlohmann::json;

namespace {

json load_golden(const std::string& name) {
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

  explicit NpuMachine(const std::string& release) {
    make_fake_torch(dir / "site-packages/torch", false);
    fs::create_directories(dir / "site-packages/torch_npu/lib");
    write_file(dir / "site-packages/torch_npu/version.py",
               "__version__ = '" + release + "'\ngit_version = 'abc'\n");
    fs::create_directories(dir / "ascend/latest");
    fs::create_directories(dir / "python/include");
    fs::create_directories(dir / "python/lib");
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

// How the process chose its backend for the "upstream" state: each of the
// three backends that patch nothing, by option and by variable.
struct BackendChoice {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
};
std::vector<BackendChoice> backend_choices(const std::string& state) {
  if (state != "upstream") return {{{}, {}}, {{"--backend", "triton"}, {}}};
  return {{{"--backend", "mlir"}, {}},
          {{}, {{"TORCHINDUCTOR_NPU_BACKEND", "dvm"}}},
          {{"--backend", "ascendc"}, {}}};
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
                                               const BackendChoice& b) {
  std::map<std::string, std::string> env = b.env;
  if (c.ascend) env["ASCEND_HOME_PATH"] = m.placeholders.at("${ASCEND_HOME_PATH}");
  if (c.libtorch_npu_path) env["LIBTORCH_NPU_PATH"] = "/opt/libtorch_npu/lib";
  if (c.state == "triton-noaoti") env["DISABLE_AOTI_PATCH"] = "1";
  return env;
}

// The variables the case does not set are unset, whatever the test's environment has.
std::vector<std::string> unset_vars(const std::map<std::string, std::string>& env) {
  std::vector<std::string> unset;
  for (const char* var :
       {"DISABLE_AOTI_PATCH", "TORCHINDUCTOR_NPU_BACKEND", "ASCEND_HOME_PATH", "LIBTORCH_NPU_PATH"})
    if (!env.count(var)) unset.push_back(var);
  return unset;
}

// Runs every case of `file` through the kbuild binary on a machine with `release`.
int check_cases(const std::string& file, const std::string& release) {
  NpuMachine m(release);
  json golden = load_golden(file);
  int checked = 0;
  for (const auto& [key, expected] : golden["cases"].items()) {
    Case c(key);
    for (const BackendChoice& b : backend_choices(c.state)) {
      INFO(key << " with " << shell_join_for_info(b));
      std::vector<std::string> args = common_args(m, c);
      args.insert(args.end(), b.args.begin(), b.args.end());
      auto env = environment(m, c, b);
      auto unset = unset_vars(env);

      std::vector<std::string> build = args;
      // The compiler and the ISA choose the build's flags; `options` takes neither.
      build.insert(build.end(), {"--cxx", "g++", "--isa", c.isa_picked ? "amx+bf16" : "none"});
      build.insert(build.end(),
                   {"--dry-run", m.subst("${OUT_DIR}/kernel.cpp"), "-o",
                    m.subst(c.compile_only ? "${OUT_DIR}/kernel.o" : "${OUT_DIR}/kernel.so")});
      RunResult dry = run_kbuild(build, m.home.str(), env, unset);
      std::vector<std::string> options = {"options", "--json"};
      options.insert(options.end(), args.begin(), args.end());
      RunResult opt = run_kbuild(options, m.home.str(), env, unset);
      INFO("dry-run stderr: " << dry.err << "\noptions stderr: " << opt.err);

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
          CHECK(m.subst_all(values) == m.subst_all(expected["options"][i]));
          ++i;
        }
      }
      ++checked;
    }
  }
  return checked;
}

}  // namespace

TEST_CASE("torch_npu 2.11.0.post1: all 192 measured cases, argv and options --json", "[golden]") {
  json golden = load_golden("torch_npu_commands.json");
  REQUIRE(golden["cases"].size() == 192);
  // 64 triton and 64 triton-noaoti cases run with the default backend and
  // with --backend triton; 64 upstream cases with mlir, dvm and ascendc.
  CHECK(check_cases("torch_npu_commands.json", "2.11.0.post1") == 128 * 2 + 64 * 3);
}

TEST_CASE("torch_npu 2.11.0.post2: the hand-written cases of the second release", "[golden]") {
  CHECK(check_cases("torch_npu_post2_cases.json", "2.11.0.post2") > 0);
}

// torch_npu's older releases with their torch (torch_npu_old_releases.json,
// derived from the releases' source: see its README): keyed
// "2.7.1.post4|torch=2.7.1|npu|aot=False|co=False"; backend triton (the
// default), ASCEND_HOME_PATH set, g++, --isa none.
TEST_CASE("torch_npu 2.7.1 and 2.9.0: the older optimization flags on their torch's line",
          "[golden]") {
  json golden = load_golden("torch_npu_old_releases.json");
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
    RunResult dry = run_kbuild(
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
