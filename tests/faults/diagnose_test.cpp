// Diagnosing failures: the earliest failing stage from what really failed,
// the evidence report, the load check, doctor and explain.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;
using nlohmann::json;

namespace {

struct DiagnoseCase {
  TempDir home, dir;
  RunResult kbuild(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    return run_kbuild(std::move(args), home.str(), std::move(env));
  }
  std::string kernel(const std::string& name, const std::string& text) {
    write_file(dir / name, text);
    return dir / name;
  }
  bool leftovers() const {
    for (auto& e : fs::directory_iterator(dir.path()))
      if (e.path().filename().string().find("kbuild-tmp") != std::string::npos) return true;
    return false;
  }
};

std::string error_line_anywhere(const std::string& err) {
  auto at = err.find("kbuild: error[");
  return at == std::string::npos ? "" : err.substr(at, err.find('\n', at) - at);
}

// Quotes words for sh -c (script(1) takes a command string).
std::string shell_words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    std::string q = "'";
    for (char ch : w) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += (out.empty() ? "" : " ") + q + "'";
  }
  return out;
}

const char* kCallsMissing =
    "extern \"C\" int missing_fn();\nextern \"C\" int f() { return missing_fn(); }\n";

}  // namespace

TEST_CASE(
    "a library that is not found fails at link, naming it, its provider and the dirs searched",
    "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", "extern \"C\" int f() { return 1; }\n");
  write_file(c.dir / "dev.json",
             "{\"device\": \"acc\",\n \"libraries_dirs\": [\"/opt/acc/lib\"],\n \"libraries\": "
             "[\"acc_runtime_xyz\"]}");
  RunResult r = c.kbuild({"--no-torch", "--config", c.dir / "dev.json", "--device", "acc", k, "-o",
                          c.dir / "k.so", "--report", c.dir / "report.json"});
  INFO(r.err);
  CHECK(r.exit_code == 6);
  std::string line = error_line_anywhere(r.err);
  CHECK(
      line.find(
          "kbuild: error[link]: link failed: cannot find -lacc_runtime_xyz (added by config acc, " +
          c.dir / "dev.json:3)") == 0);
  CHECK(line.find("searched -L /opt/acc/lib and the system's") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k.so"));
  CHECK_FALSE(c.leftovers());
  json report = json::parse(read_file(c.dir / "report.json"));
  CHECK(report["result"]["stage"] == "link");
  CHECK(report["result"]["exit_code"] == 6);
  CHECK(report["failure_analysis"]["missing_libraries"] == json::array({"acc_runtime_xyz"}));
}

TEST_CASE("an undefined reference fails at link when the link requires every symbol",
          "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", kCallsMissing);
  RunResult r =
      c.kbuild({"--no-torch", "--extra-flags", "-Wl,--no-undefined", k, "-o", c.dir / "k.so"});
  CHECK(r.exit_code == 6);
  CHECK(error_line_anywhere(r.err).find("undefined reference to 'missing_fn'") !=
        std::string::npos);
}

TEST_CASE("--check-load: an unresolved symbol is a load failure and the old library stays",
          "[diagnose]") {
  DiagnoseCase c;
  write_file(c.dir / "k.so", "old");
  std::string k = c.kernel("k.cpp", kCallsMissing);
  RunResult r = c.kbuild(
      {"--no-torch", "--check-load", k, "-o", c.dir / "k.so", "--report", c.dir / "r.json"});
  INFO(r.err);
  CHECK(r.exit_code == 7);
  CHECK(error_line_anywhere(r.err).find("kbuild: error[load]: load failed: ") == 0);
  CHECK(error_line_anywhere(r.err).find("undefined symbol: missing_fn") != std::string::npos);
  // It names the output the user asked for, not kbuild's temporary.
  CHECK(error_line_anywhere(r.err).find("load failed: " + (c.dir / "k.so") +
                                        ": undefined symbol") != std::string::npos);
  CHECK(error_line_anywhere(r.err).find("kbuild-tmp") == std::string::npos);
  CHECK(read_file(c.dir / "k.so") == "old");
  CHECK_FALSE(c.leftovers());
  json report = json::parse(read_file(c.dir / "r.json"));
  CHECK(report["load_check"]["undefined_symbols"] == json::array({"missing_fn"}));
  CHECK(report["result"]["stage"] == "load");
  // Without the check the same library is built (the failure is only at load).
  CHECK(c.kbuild({"--no-torch", k, "-o", c.dir / "k.so"}).exit_code == 0);
}

TEST_CASE("--check-load says when a library loads only through LD_LIBRARY_PATH", "[diagnose]") {
  DiagnoseCase c;
  // libdep.so in a library dir, linked without a RUNPATH for it.
  write_file(c.dir / "dep.cpp", "extern \"C\" int dep() { return 3; }\n");
  fs::create_directories(c.dir / "lib");
  REQUIRE(
      run({"/usr/bin/g++", "-shared", "-fPIC", c.dir / "dep.cpp", "-o", c.dir / "lib/libdep.so"})
          .exit_code == 0);
  std::string k =
      c.kernel("k.cpp", "extern \"C\" int dep();\nextern \"C\" int f() { return dep(); }\n");
  RunResult r = c.kbuild(
      {"--no-torch", "--check-load", k, "-o", c.dir / "k.so", "-L", c.dir / "lib", "-l", "dep"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find(c.dir / "k.so" + " loads only with its library dirs (" + c.dir / "lib" +
                   ") on LD_LIBRARY_PATH") != std::string::npos);
  CHECK(r.err.find("libdep.so: cannot open shared object file") != std::string::npos);
  // The hint works as written: a device file's ldflags entry (Inductor adds
  // its '-'), or --extra-flags, naming the dir itself.
  CHECK(r.err.find("\"ldflags\": [\"Wl,-rpath," + c.dir / "lib" + "\"]") != std::string::npos);
  CHECK(r.err.find("--extra-flags '-Wl,-rpath," + c.dir / "lib" + "'") != std::string::npos);
  // With a RUNPATH it loads without the variable: nothing to say.
  RunResult rpath =
      c.kbuild({"--no-torch", "--check-load", k, "-o", c.dir / "k2.so", "-L", c.dir / "lib", "-l",
                "dep", "--extra-flags", "-Wl,-rpath," + c.dir / "lib"});
  INFO(rpath.err);
  REQUIRE(rpath.exit_code == 0);
  CHECK(rpath.err.find("loads only with its library dirs") == std::string::npos);
}

TEST_CASE("--check-load=strict: a library that needs the link's dirs on LD_LIBRARY_PATH is exit 7",
          "[diagnose]") {
  DiagnoseCase c;
  write_file(c.dir / "dep.cpp", "extern \"C\" int dep() { return 3; }\n");
  fs::create_directories(c.dir / "lib");
  REQUIRE(
      run({"/usr/bin/g++", "-shared", "-fPIC", c.dir / "dep.cpp", "-o", c.dir / "lib/libdep.so"})
          .exit_code == 0);
  std::string k =
      c.kernel("k.cpp", "extern \"C\" int dep();\nextern \"C\" int f() { return dep(); }\n");
  write_file(c.dir / "k.so", "old");
  RunResult r = c.kbuild({"--no-torch", "--check-load=strict", "-q", k, "-o", c.dir / "k.so", "-L",
                          c.dir / "lib", "-l", "dep"});
  INFO(r.err);
  CHECK(r.exit_code == 7);
  const std::string line = error_line_anywhere(r.err);
  CHECK(line.find(c.dir / "k.so" + " loads only with the link's library dirs (" + c.dir / "lib" +
                  ") on LD_LIBRARY_PATH") != std::string::npos);
  CHECK(line.find("libdep.so: cannot open shared object file") != std::string::npos);
  CHECK(line.find("\"ldflags\": [\"Wl,-rpath," + c.dir / "lib" + "\"]") != std::string::npos);
  CHECK(read_file(c.dir / "k.so") == "old");  // the old library stays
  // With the RUNPATH the hint gives, it loads as any process would.
  RunResult rpath =
      c.kbuild({"--no-torch", "--check-load=strict", k, "-o", c.dir / "k.so", "-L", c.dir / "lib",
                "-l", "dep", "--extra-flags", "-Wl,-rpath," + c.dir / "lib"});
  INFO(rpath.err);
  CHECK(rpath.exit_code == 0);
  // The hint's ldflags entry, copied into a device file as written, works.
  write_file(c.dir / "acc.json", "{\"device\": \"acc\", \"libraries_dirs\": [\"" + c.dir / "lib" +
                                     "\"], \"libraries\": [\"dep\"], \"ldflags\": [\"Wl,-rpath," +
                                     c.dir / "lib" + "\"]}");
  RunResult device = c.kbuild({"--no-torch", "--device-file", c.dir / "acc.json", "--device", "acc",
                               "--check-load=strict", k, "-o", c.dir / "k4.so"});
  INFO(device.err);
  CHECK(device.exit_code == 0);
  // Only "strict" is a value it takes.
  RunResult bad = c.kbuild({"--no-torch", "--check-load=always", k, "-o", c.dir / "k3.so"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--check-load") != std::string::npos);
}

TEST_CASE("--require-symbol: a missing symbol is a load failure; present ones pass", "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", "extern \"C\" int kernel() { return 1; }\n");
  RunResult ok = c.kbuild({"--no-torch", "--require-symbol", "kernel", k, "-o", c.dir / "k.so"});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  RunResult bad = c.kbuild({"--no-torch", "--require-symbol", "kernel", "--require-symbol", "other",
                            k, "-o", c.dir / "k2.so"});
  CHECK(bad.exit_code == 7);
  CHECK(error_line_anywhere(bad.err).find("missing symbol: other") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k2.so"));
}

TEST_CASE("the report of a compile failure holds what reproduces it", "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", "extern \"C\" int f() { return }\n");
  RunResult r = c.kbuild({"--no-torch", k, "-o", c.dir / "k.so", "--report", c.dir / "r.json"},
                         {{"CXX", "g++"}});
  CHECK(r.exit_code == 5);
  json rep = json::parse(read_file(c.dir / "r.json"));
  CHECK(rep["schema"] == "kbuild-report/1");
  CHECK(rep["kbuild_version"].is_string());
  CHECK(rep["compiler"]["path"] == "g++");
  CHECK(rep["compiler"]["version"].get<std::string>().find("g++") != std::string::npos);
  CHECK(rep["host"]["machine"].is_string());
  CHECK(rep["request"]["device"] == "cpu");
  CHECK(rep["argv"][0] == "g++");
  CHECK(rep["argv"].back() == c.dir / "k.so");
  CHECK(rep["cwd"].is_string());
  CHECK(rep["environment"]["CXX"] == "g++");
  CHECK(rep["config_files"][0]["sha1"].get<std::string>().size() == 40);
  CHECK(rep["compiler_run"]["exit_code"] == 1);
  CHECK(rep["compiler_run"]["stderr"].get<std::string>().find("k.cpp:1:") != std::string::npos);
  CHECK(rep["failure_analysis"]["step"] == "compile");
  CHECK(rep["result"]["stage"] == "compile");
  CHECK(rep["timings_s"].contains("compile"));
  CHECK(rep["timings_s"].contains("config"));
}

TEST_CASE("a report is written on success, and for a config failure before anything ran",
          "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", "extern \"C\" int f() { return 1; }\n");
  REQUIRE(
      c.kbuild({"--no-torch", k, "-o", c.dir / "k.so", "--report", c.dir / "ok.json"}).exit_code ==
      0);
  json ok = json::parse(read_file(c.dir / "ok.json"));
  CHECK(ok["result"]["ok"] == true);
  CHECK(ok["result"]["stage"].is_null());
  write_file(c.dir / "bad.json", "{\"device\": 1}");
  RunResult r =
      c.kbuild({"--config", c.dir / "bad.json", k, "--report", c.dir / "bad-report.json"});
  CHECK(r.exit_code == 3);
  json bad = json::parse(read_file(c.dir / "bad-report.json"));
  CHECK(bad["result"]["stage"] == "config");
  CHECK(bad["result"]["message"].get<std::string>().find("bad.json") != std::string::npos);
}

TEST_CASE("doctor: after a device file fails, the device is never 'ok ... arguments resolved'",
          "[diagnose]") {
  DiagnoseCase c;
  write_file(c.dir / "acc.json", "{\"device\": \"acc\", \"libraries\": [\"x\"],}");  // malformed
  RunResult r =
      c.kbuild({"doctor", "--no-torch", "--device-file", c.dir / "acc.json", "--device", "acc"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 12);
  CHECK(r.out.find("fail\tdevice file\t") != std::string::npos);
  CHECK(r.out.find("arguments resolved") == std::string::npos);
  CHECK(r.out.find("fail\tdevice acc\tnot resolved: " + c.dir / "acc.json") != std::string::npos);
}

TEST_CASE("doctor: all well is exit 0; a missing variable or library fails with a hint",
          "[diagnose]") {
  DiagnoseCase c;
  RunResult ok = c.kbuild({"doctor", "--no-torch"});
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("ok\tcompiler\t") != std::string::npos);
  CHECK(ok.out.find("ok\tdevice file\t" + source_root() + "/configs/devices/npu.json") !=
        std::string::npos);

  RunResult npu = c.kbuild({"doctor", "--no-torch", "--device", "npu", "--json"});
  CHECK(npu.exit_code == 12);
  json checks = json::parse(npu.out);
  bool named = false;
  for (const auto& ch : checks)
    named = named || (ch["status"] == "fail" && ch["detail"].get<std::string>().find(
                                                    "ASCEND_HOME_PATH") != std::string::npos);
  CHECK(named);

  write_file(
      c.dir / "dev.json",
      "{\"device\": \"acc\", \"libraries\": [\"acc_xyz\"], \"include_dirs\": [\"/nope/inc\"]}");
  RunResult lib =
      c.kbuild({"doctor", "--no-torch", "--config", c.dir / "dev.json", "--device", "acc"});
  CHECK(lib.exit_code == 12);
  CHECK(lib.out.find("fail\tlibrary acc_xyz\t") != std::string::npos);
  CHECK(lib.out.find("warn\tinclude dir\t/nope/inc does not exist") != std::string::npos);
  CHECK(lib.out.find("hint: added by config acc, " + c.dir / "dev.json:1") != std::string::npos);

  RunResult cxx = c.kbuild({"doctor", "--no-torch", "--cxx", "no-such-cxx"});
  CHECK(cxx.exit_code == 12);
  CHECK(cxx.out.find("fail\tcompiler\tno-such-cxx not found") != std::string::npos);
}

TEST_CASE("explain names the layer, provider and file line of every flag, and what was dropped",
          "[diagnose]") {
  DiagnoseCase c;
  make_fake_torch(c.dir / "torch", false);
  RunResult r =
      c.kbuild({"explain", "--device", "npu", "k.cpp", "--torch-root", c.dir / "torch",
                "--python-include", "/py/inc", "--python-libdir", "/py/lib", "--isa", "none"},
               {{"ASCEND_HOME_PATH", "/opt/ascend"}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string npu_json = source_root() + "/configs/devices/npu.json";
  CHECK(r.out.find("-D USE_NPU") != std::string::npos);
  // Columns aligned: as many spaces as the widest cell of the column needs.
  CHECK(std::regex_search(r.out, std::regex("device +config npu +" + npu_json + ":8\n")));
  CHECK(r.out.find("-O3") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex("base +base ")));
  CHECK(std::regex_search(r.out, std::regex("torch +torch ")));
  // npu.json repeats torch's include and lib dirs: dropped, and said so.
  auto dropped = r.out.find("dropped:");
  REQUIRE(dropped != std::string::npos);
  CHECK(r.out.find("-I" + c.dir / "torch/include", dropped) != std::string::npos);
  CHECK(r.out.find("duplicate of the entry from torch", dropped) != std::string::npos);
  // Its columns are named; torch's layer is there, so nothing says it is not.
  CHECK(std::regex_search(r.out, std::regex("\nflag +layer +provider +file:line\n")));
  CHECK(r.out.find("no torch layer") == std::string::npos);
  // Without torch's flags explain says why.
  RunResult none = c.kbuild({"explain", "--device", "cpu", "k.cpp", "--no-torch"});
  CHECK(none.out.find("\nno torch layer: --no-torch was given\n") != std::string::npos);
  // A Python without torch (here: one that prints nothing).
  RunResult missing = c.kbuild({"explain", "--device", "cpu", "k.cpp", "--python", "/bin/true"});
  INFO(missing.err);
  CHECK(missing.exit_code == 0);
  CHECK(missing.out.find("\nno torch layer: torch was not found") != std::string::npos);
}

// The line of npu.json that holds `text` (1-based).
int config_line(const std::string& file, const std::string& text) {
  std::istringstream in(read_file(source_root() + "/configs/" + file));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(text) != std::string::npos) return n;
  }
  FAIL(file << " has no line with " << text);
  return 0;
}

int npu_json_line(const std::string& text) {
  return config_line("devices/npu.json", text);
}

TEST_CASE("explain shows what a plugin dropped from the base layer and every entry it added",
          "[diagnose]") {
  DiagnoseCase c;
  make_fake_torch(c.dir / "torch", false);
  const std::string npu_json = source_root() + "/configs/devices/npu.json";
  const std::string drop_at =
      npu_json + ":" + std::to_string(npu_json_line("\"drop\": \"march=native\""));
  for (const std::string device : {"npu", "cpu"}) {
    RunResult r =
        c.kbuild({"explain", "--device", device, "--plugin", "npu", "k.cpp", "--torch-root",
                  c.dir / "torch", "--torch-npu-root", c.dir / "torch_npu", "--python-include",
                  "/py/inc", "--python-libdir", "/py/lib", "--isa", "none"},
                 {{"ASCEND_HOME_PATH", "/opt/ascend"}});
    INFO(device << ": " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    auto dropped = r.out.find("dropped:");
    REQUIRE(dropped != std::string::npos);
    CHECK(r.out.find("-march=native") == r.out.find("-march=native", dropped));
    // The base layer's flags come from the Inductor profile, file:line.
    const std::string profile = source_root() + "/configs/profiles/2.11.json";
    const std::string march_at =
        profile + ":" + std::to_string(config_line("profiles/2.11.json", "\"march=native\""));
    CHECK(r.out.find("-march=native    base  base  " + march_at + "  (dropped by " + drop_at +
                     ", plugin npu, backend triton)") != std::string::npos);
    CHECK(r.out.find("-I" + c.dir / "torch/include/TH") != std::string::npos);
    CHECK(std::regex_search(
        r.out,
        std::regex("device +plugin npu backend triton \\(every device\\) +" + npu_json + ":")));
  }
  // mlir patches nothing: -march=native stays, and nothing is dropped for it.
  RunResult mlir =
      c.kbuild({"explain", "--device", "npu", "--backend", "mlir", "k.cpp", "--no-torch"});
  REQUIRE(mlir.exit_code == 0);
  CHECK(std::regex_search(mlir.out, std::regex("\n-march=native +base +base ")));
  CHECK(mlir.err.find("plugin npu, backend mlir: patches nothing") != std::string::npos);
}

namespace {
// torch (2.11.0), an installed torch_npu of `release` and a CANN toolkit.
struct NpuSite {
  std::string torch, torch_npu, ascend;
  NpuSite(const TempDir& dir, const std::string& release) {
    torch = dir / "site-packages/torch";
    torch_npu = dir / "site-packages/torch_npu";
    ascend = dir / "Ascend/latest";
    make_fake_torch(torch, true);
    fs::create_directories(torch_npu + "/lib");
    write_file(torch_npu + "/lib/libtorch_npu.so", "");
    write_file(torch_npu + "/version.py", "__version__ = '" + release + "'\n");
    write_file(ascend + "/compiler/version.info", "Version=8.1.RC1\ntimestamp=0\n");
  }
  std::vector<std::string> args() const {
    return {"--torch-root",     torch,    "--torch-npu-root", torch_npu,
            "--python-include", "/p/inc", "--python-libdir",  "/p/lib"};
  }
};
}  // namespace

TEST_CASE("--report records the version matrix: torch, torch_npu, CANN, backend, switches",
          "[diagnose]") {
  DiagnoseCase c;
  NpuSite site(c.dir, "2.11.0.post2");
  std::string k = c.kernel("k.cpp", "int f() { return 1; }\n");
  std::vector<std::string> args = {"--device",     "npu",       k,          "-o",
                                   c.dir / "k.so", "--dry-run", "--report", c.dir / "r.json"};
  for (const std::string& a : site.args()) args.push_back(a);
  RunResult ok = c.kbuild(args, {{"ASCEND_HOME_PATH", site.ascend}, {"DISABLE_AOTI_PATCH", "1"}});
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  json r = json::parse(read_file(c.dir / "r.json"));
  CHECK(r["versions"]["torch"] == "2.11.0");
  REQUIRE(r["versions"]["plugins"].size() == 1);
  json p = r["versions"]["plugins"][0];
  CHECK(p["package"] == "torch_npu");
  CHECK(p["version"] == "2.11.0.post2");
  CHECK(p["release"] == "2.11.0.post2");
  CHECK(p["backend"] == "triton");
  CHECK(p["backend_from"] == "default");
  CHECK(p["device_options_patched"] == false);
  CHECK(p["switches"]["DISABLE_AOTI_PATCH"] == "1");
  CHECK(p["toolkit"] == "CANN");
  CHECK(p["toolkit_version"] == "8.1.RC1");

  // A failed build (ASCEND_HOME_PATH unset) keeps the matrix: what a failure report needs.
  RunResult bad = c.kbuild(args, {{"TORCHINDUCTOR_NPU_BACKEND", "triton"}});
  CHECK(bad.exit_code == 4);
  json f = json::parse(read_file(c.dir / "r.json"));
  CHECK(f["result"]["stage"] == "provider");
  CHECK(f["versions"]["plugins"][0]["version"] == "2.11.0.post2");
  CHECK(f["versions"]["plugins"][0]["backend_from"] == "TORCHINDUCTOR_NPU_BACKEND");
  CHECK(f["versions"]["plugins"][0]["toolkit_version"].is_null());
}

TEST_CASE(
    "doctor and --version show the torch_npu release and backend; doctor warns about "
    "a source checkout and mismatched release lines",
    "[diagnose]") {
  DiagnoseCase c;
  NpuSite site(c.dir, "2.11.0.post1");
  std::vector<std::string> doctor = {"doctor", "--device", "cpu", "--plugin", "npu"};
  for (const std::string& a : site.args()) doctor.push_back(a);
  RunResult ok = c.kbuild(doctor, {{"ASCEND_HOME_PATH", site.ascend}});
  INFO(ok.out << ok.err);
  CHECK(ok.out.find("ok\tplugin npu\ttorch_npu 2.11.0.post1, backend triton (default), device "
                    "options patched, CANN 8.1.RC1") != std::string::npos);
  CHECK(ok.out.find("source checkout") == std::string::npos);
  CHECK(ok.out.find("different release lines") == std::string::npos);

  RunResult version = c.kbuild({"--version"}, {{"KBUILD_TORCH_ROOT", site.torch},
                                               {"KBUILD_TORCH_NPU_ROOT", site.torch_npu},
                                               {"TORCHINDUCTOR_NPU_BACKEND", "dvm"}});
  CHECK(version.out.find("plugin npu: torch_npu 2.11.0.post1, backend dvm (from "
                         "TORCHINDUCTOR_NPU_BACKEND), Inductor's own device options") !=
        std::string::npos);

  // A source checkout: no lib/libtorch_npu.so, setup.py beside the package.
  fs::remove(site.torch_npu + "/lib/libtorch_npu.so");
  write_file(c.dir / "site-packages/setup.py", "");
  // ... of another line than torch's.
  write_file(site.torch_npu + "/version.py", "__version__ = '2.9.0'\n");
  RunResult warn = c.kbuild(doctor, {{"ASCEND_HOME_PATH", site.ascend}});
  INFO(warn.out);
  CHECK(warn.out.find("warn\tplugin npu\ttorch_npu at " + site.torch_npu +
                      " is a source checkout (no lib/libtorch_npu.so, ../setup.py beside it)") !=
        std::string::npos);
  CHECK(warn.out.find("warn\tplugin npu\ttorch 2.11.0 and torch_npu 2.9.0 come from different "
                      "lines (torch 2.11; torch_npu for torch 2.9)") != std::string::npos);
  CHECK(warn.exit_code == 11);  // warnings only: the rest of the site is whole
}

TEST_CASE(
    "torch_npu 2.12.0 and master on torch 2.11: --version, doctor and --report name the release, "
    "its backends and DISABLE_AOTI_PATCH; doctor warns about the lines",
    "[diagnose]") {
  DiagnoseCase c;
  NpuSite site(c.dir, "2.12.0");  // as measured: torch_npu 2.12.0 on torch 2.11
  const std::map<std::string, std::string> env{{"KBUILD_TORCH_ROOT", site.torch},
                                               {"KBUILD_TORCH_NPU_ROOT", site.torch_npu}};
  RunResult version = c.kbuild({"--version"}, env);
  INFO(version.out << version.err);
  CHECK(version.out.find("plugin npu: torch_npu 2.12.0, backend triton (default), device options "
                         "patched, CANN unknown; backends of release 2.12.0 (for torch 2.12): "
                         "triton, mlir; DISABLE_AOTI_PATCH honoured") != std::string::npos);

  std::vector<std::string> doctor = {"doctor", "--device", "npu"};
  for (const std::string& a : site.args()) doctor.push_back(a);
  RunResult checked = c.kbuild(doctor, {{"ASCEND_HOME_PATH", site.ascend}});
  INFO(checked.out);
  CHECK(checked.out.find("warn\tplugin npu\ttorch 2.11.0 and torch_npu 2.12.0 come from "
                         "different lines (torch 2.11; torch_npu for torch 2.12)") !=
        std::string::npos);
  CHECK(checked.out.find("torch_npu release 2.12.0 is made for torch 2.12, but torch here is "
                         "2.11.0: its Inductor profile 2.11 stands in") != std::string::npos);

  // A master build on that torch says 2.11.0+git...: the variable names the line.
  write_file(site.torch_npu + "/version.py", "__version__ = '2.11.0+git9e73e70'\n");
  std::string k = c.kernel("k.cpp", "int f() { return 1; }\n");
  std::vector<std::string> args = {"--device",     "npu",       k,          "-o",
                                   c.dir / "k.so", "--dry-run", "--report", c.dir / "r.json"};
  for (const std::string& a : site.args()) args.push_back(a);
  RunResult ok = c.kbuild(args, {{"ASCEND_HOME_PATH", site.ascend},
                                 {"DISABLE_AOTI_PATCH", "1"},
                                 {"KBUILD_TORCH_NPU_RELEASE", "master"}});
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(ok.err.find("DISABLE_AOTI_PATCH=1 is set, but this release ignores it") !=
        std::string::npos);
  json p = json::parse(read_file(c.dir / "r.json"))["versions"]["plugins"][0];
  CHECK(p["version"] == "2.11.0+git9e73e70");
  CHECK(p["release"] == "master");
  CHECK(p["release_from"] == "KBUILD_TORCH_NPU_RELEASE");
  CHECK(p["release_backends"] ==
        json::array({"triton", "mlir", "dvm", "ascendc", "triton_experimental"}));
  CHECK(p["release_torch"] == json::array({"2.13", "2.14", "2.15"}));
  CHECK(p["switches_honoured"]["DISABLE_AOTI_PATCH"] == false);
  CHECK(p["switches"]["DISABLE_AOTI_PATCH"] == "1");
  CHECK(p["device_options_patched"] == true);
}

TEST_CASE("--compile-commands adds and updates entries, also from parallel builds", "[diagnose]") {
  DiagnoseCase c;
  std::vector<std::thread> builds;
  std::vector<int> codes(8, -1);
  // Catch2's macros are not thread-safe: the threads only run processes.
  const std::string bin = kbuild_binary(), db_path = c.dir / "compile_commands.json";
  const std::map<std::string, std::string> env{{"HOME", c.home.str()}};
  for (int i = 0; i < 8; ++i) {
    std::string name = "k";
    name += std::to_string(i);
    name += ".cpp";
    std::string k = c.kernel(name, "extern \"C\" int f() { return 1; }\n");
    builds.emplace_back([&, i, k] {
      codes[i] =
          run({bin, "--no-torch", "--dry-run", k, "--compile-commands", db_path}, env).exit_code;
    });
  }
  for (auto& t : builds) t.join();
  for (int code : codes) CHECK(code == 0);
  json db = json::parse(read_file(c.dir / "compile_commands.json"));
  CHECK(db.size() == 8);
  // The same build again replaces its entry.
  REQUIRE(c.kbuild({"--no-torch", "--dry-run", c.dir / "k3.cpp", "-D", "X=1", "--compile-commands",
                    c.dir / "compile_commands.json"})
              .exit_code == 0);
  db = json::parse(read_file(c.dir / "compile_commands.json"));
  CHECK(db.size() == 8);
  int with_x = 0;
  for (const auto& e : db) {
    CHECK(e["directory"].is_string());
    CHECK(e["arguments"].is_array());
    if (e["file"] == c.dir / "k3.cpp")
      with_x =
          std::find(e["arguments"].begin(), e["arguments"].end(), "X=1") != e["arguments"].end();
  }
  CHECK(with_x == 1);
  write_file(c.dir / "broken.json", "{oops");
  RunResult r = c.kbuild(
      {"--no-torch", "--dry-run", c.dir / "k1.cpp", "--compile-commands", c.dir / "broken.json"});
  CHECK(r.exit_code == 9);
  CHECK(read_file(c.dir / "broken.json") == "{oops");
}

TEST_CASE(
    "--quiet drops notes; output to a pipe has no colour codes; --version shows the config path",
    "[diagnose]") {
  DiagnoseCase c;
  // A kernel that exists: a dry run checks its source as the build does.
  const std::string kernel = c.kernel("k.cpp", "int f() { return 1; }\n");
  RunResult loud = c.kbuild({"--device", "tpu", "--dry-run", "--no-torch", kernel});
  CHECK(loud.err.find("kbuild: note: unknown device 'tpu'") != std::string::npos);
  CHECK(loud.err.find("\033[") == std::string::npos);
  RunResult quiet = c.kbuild({"--device", "tpu", "--dry-run", "--no-torch", "-q", kernel});
  CHECK(quiet.err.empty());
  RunResult version = c.kbuild({"--version"});
  CHECK(version.out.find("/etc/kbuild/devices.d") != std::string::npos);
  CHECK(version.out.find(c.home / ".config/kbuild/devices.d") != std::string::npos);
}

TEST_CASE("a failing exec provider: stage provider in the message and the report, nothing written",
          "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", "extern \"C\" int f() { return 1; }\n");
  write_file(c.dir / "prov.sh", "#!/bin/sh\necho 'no driver' >&2\nexit 3\n", true);
  write_file(c.dir / "dev.json", "{\"device\": \"ext\", \"exec\": {\"command\": [\"./prov.sh\"]}}");
  RunResult r = c.kbuild({"--no-torch", "--config", c.dir / "dev.json", "--device", "ext", k, "-o",
                          c.dir / "k.so", "--report", c.dir / "r.json"});
  CHECK(r.exit_code == 4);
  json rep = json::parse(read_file(c.dir / "r.json"));
  CHECK(rep["result"]["stage"] == "provider");
  CHECK(rep["provider"]["kind"] == "exec");
  CHECK_FALSE(rep.contains("compiler_run"));
  CHECK_FALSE(fs::exists(c.dir / "k.so"));
}

TEST_CASE("colours on a terminal, none with NO_COLOR; --verbose says what runs", "[diagnose]") {
  DiagnoseCase c;
  std::string k = c.kernel("k.cpp", "extern \"C\" int f() { return 1; }\n");
  std::string cmd = shell_words({kbuild_binary(), "--device", "tpu", "--dry-run", "--no-torch", k});
  // script(1) gives kbuild a terminal.
  RunResult tty =
      run({"/usr/bin/script", "-qec", cmd, "/dev/null"}, {{"HOME", c.home.str()}}, {"NO_COLOR"});
  CHECK(tty.out.find("\033[1;36mnote:") != std::string::npos);
  RunResult plain = run({"/usr/bin/script", "-qec", cmd, "/dev/null"},
                        {{"HOME", c.home.str()}, {"NO_COLOR", "1"}});
  CHECK(plain.out.find("kbuild: note:") != std::string::npos);
  CHECK(plain.out.find("\033[") == std::string::npos);
  RunResult verbose = c.kbuild({"--no-torch", "-v", k, "-o", c.dir / "k.so"});
  CHECK(verbose.exit_code == 0);
  // A miss names what ran, once it ran (a hit names nothing: nothing runs).
  CHECK(verbose.err.find("kbuild: info: ran: ") != std::string::npos);
  CHECK(verbose.err.find("kbuild: info: compile took ") != std::string::npos);
}

TEST_CASE(
    "doctor colours its statuses on a terminal, as errors and warnings are; not with NO_COLOR",
    "[diagnose]") {
  DiagnoseCase c;
  // script(1) gives the command a terminal for stdout and stderr.
  const std::string command =
      "HOME=" + c.home.str() + " " + kbuild_binary() + " doctor --no-torch --device npu; true";
  RunResult tty = run({"/usr/bin/script", "-qec", command, "/dev/null"}, {}, {"NO_COLOR"});
  INFO(tty.out);
  CHECK(tty.out.find("\033[32mok\033[0m\tcompiler\t") != std::string::npos);
  CHECK(tty.out.find("\033[1;31mfail\033[0m\t") != std::string::npos);
  RunResult plain = run({"/usr/bin/script", "-qec", command, "/dev/null"}, {{"NO_COLOR", "1"}});
  CHECK(plain.out.find("ok\tcompiler\t") != std::string::npos);
  CHECK(plain.out.find("\033[") == std::string::npos);
}

TEST_CASE("doctor escapes newlines and control characters of paths and env_help", "[diagnose]") {
  DiagnoseCase c;
  RunResult cxx = c.kbuild({"doctor", "--no-torch", "--cxx", "/no/such\ncxx\x1b[31m"});
  INFO(cxx.out);
  CHECK(cxx.exit_code == 12);
  CHECK(cxx.out.find("fail\tcompiler\t/no/such\\ncxx\\x1b[31m not found") != std::string::npos);
  CHECK(cxx.out.find('\x1b') == std::string::npos);

  write_file(c.dir / "help.json",
             "{\"device\": \"acc\", \"cflags\": [\"${env:ACC_HOME_XYZ}\"], \"env_help\": "
             "{\"ACC_HOME_XYZ\": \"run set_env.sh\\nthen \\u0007retry\"}}");
  RunResult help =
      c.kbuild({"doctor", "--no-torch", "--config", c.dir / "help.json", "--device", "acc"});
  INFO(help.out);
  CHECK(help.exit_code == 12);
  CHECK(help.out.find("run set_env.sh\\nthen \\x07retry") != std::string::npos);
  CHECK(help.out.find('\a') == std::string::npos);
  RunResult json_out = c.kbuild(
      {"doctor", "--no-torch", "--json", "--config", c.dir / "help.json", "--device", "acc"});
  CHECK(json_out.out.find("run set_env.sh\\\\nthen") != std::string::npos);
}

TEST_CASE("the torch_npu release --version names is the one a build reproduces", "[diagnose]") {
  // No torch_npu and no torch: a build reproduces the newest release for
  // the default Inductor profile's line (2.11); --version must say the same.
  DiagnoseCase c;
  // A torch without a version file (as a source tree): the default line.
  fs::create_directories(c.dir / "torch/include");
  fs::create_directories(c.dir / "torch/lib");
  const std::map<std::string, std::string> env{{"KBUILD_TORCH_ROOT", c.dir / "torch"},
                                               {"ASCEND_HOME_PATH", c.dir / "ascend"}};
  write_file(c.dir / "k.cpp", "int f() { return 1; }\n");
  RunResult build =
      c.kbuild({"--device", "npu", "--dry-run", "-v", c.dir / "k.cpp", "-o", c.dir / "k.so"}, env);
  INFO(build.err);
  const std::string marker = "reproducing ";
  const auto at = build.err.find(marker);
  REQUIRE(at != std::string::npos);
  const std::string release =
      build.err.substr(at + marker.size(), build.err.find(',', at) - at - marker.size());
  CHECK(release == "2.11.0.post2");
  RunResult version = c.kbuild({"--version"}, env);
  INFO(version.out);
  // No torch_npu here: --version says so, and which release a build reproduces.
  CHECK(version.out.find("torch_npu not installed (a build reproduces " + release + ")") !=
        std::string::npos);
}
