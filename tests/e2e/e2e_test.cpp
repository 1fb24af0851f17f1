// End to end: the real kbuild binary, real g++, real files, real dlopen.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"

using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {

// dlopen()s `path` with RTLD_NOW, after loading `deps` by absolute path so
// their sonames satisfy the library's DT_NEEDED entries.
struct Loaded {
  std::vector<void*> handles;
  void* lib = nullptr;
  Loaded(const std::string& path, const Strings& deps) {
    for (const std::string& d : deps) {
      void* h = dlopen(d.c_str(), RTLD_NOW | RTLD_GLOBAL);
      INFO(d << ": " << (h ? "" : dlerror()));
      REQUIRE(h != nullptr);
      handles.push_back(h);
    }
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO(path << ": " << (lib ? "" : dlerror()));
    REQUIRE(lib != nullptr);
  }
  // Never dlclose(): an OpenMP kernel's libgomp worker threads outlive the
  // call, and unloading libgomp under them crashes the test process.
  template <typename F>
  F symbol(const char* name) {
    void* s = dlsym(lib, name);
    INFO(name);
    REQUIRE(s != nullptr);
    return reinterpret_cast<F>(s);
  }
};

using SoftmaxFn = void (*)(const float*, float*, int64_t, int64_t);

void check_softmax(SoftmaxFn kernel) {
  std::vector<float> in{1, 2, 3, 4, -1, 0, 1, 1000}, out(8);
  kernel(in.data(), out.data(), 2, 4);
  for (int r = 0; r < 2; ++r) {
    float mx = *std::max_element(in.begin() + r * 4, in.begin() + r * 4 + 4), sum = 0;
    for (int c = 0; c < 4; ++c) sum += std::exp(in[r * 4 + c] - mx);
    for (int c = 0; c < 4; ++c)
      CHECK(out[r * 4 + c] == Approx(std::exp(in[r * 4 + c] - mx) / sum).epsilon(1e-5));
  }
}

std::string example(const std::string& rel) {
  return source_root() + "/examples/" + rel;
}

// The fake Ascend SDK and torch_npu package the npu tests build against.
struct FakeAscend {
  std::string sdk, torch, torch_npu;
  explicit FakeAscend(const TempDir& dir)
      : sdk(dir / "Ascend/ascend-toolkit/latest"),
        torch(dir / "site-packages/torch"),
        torch_npu(dir / "site-packages/torch_npu") {
    std::string fake = source_root() + "/tests/e2e/fake_ascend";
    fs::create_directories(sdk + "/include");
    fs::copy(fake + "/include", sdk + "/include", fs::copy_options::recursive);
    compile_shared_library(read_file(fake + "/runtime.cpp"), sdk + "/lib64/libruntime.so",
                           "libruntime.so");
    compile_shared_library(read_file(fake + "/ascendcl.cpp"), sdk + "/lib64/libascendcl.so",
                           "libascendcl.so",
                           {"-I" + sdk + "/include", "-L" + sdk + "/lib64", "-lruntime"});
    make_fake_torch(torch, true);
    compile_shared_library(read_file(fake + "/torch_npu.cpp"), torch_npu + "/lib/libtorch_npu.so",
                           "libtorch_npu.so");
    fs::create_directories(torch_npu + "/include/third_party/acl/inc");
    write_file(torch_npu + "/version.py", "__version__ = '2.11.0.post1'\n");
  }
  Strings libraries() const {
    return {torch + "/lib/libtorch.so",        torch + "/lib/libtorch_cpu.so",
            torch + "/lib/libtorch_python.so", sdk + "/lib64/libruntime.so",
            sdk + "/lib64/libascendcl.so",     torch_npu + "/lib/libtorch_npu.so"};
  }
};

Strings split_nul(const std::string& s) {
  Strings out;
  std::string cur;
  for (char c : s) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("cpu: the example kernel is compiled, dlopen()ed and computes softmax", "[e2e]") {
  TempDir home, out;
  RunResult r = run_kbuild(
      {example("cpu/softmax_kernel.cpp"), "-o", out / "softmax.so", "--no-torch"}, home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Loaded lib(out / "softmax.so", {});
  check_softmax(lib.symbol<SoftmaxFn>("kernel"));
}

TEST_CASE("cpu with a torch tree: the full Inductor link line links and loads", "[e2e]") {
  TempDir home, dir;
  make_fake_torch(dir / "site-packages/torch", true);
  fs::create_directories(dir / "python/include");
  fs::create_directories(dir / "python/lib");
  RunResult r = run_kbuild({example("cpu/softmax_kernel.cpp"), "-o", dir / "k.so", "--torch-root",
                            dir / "site-packages/torch", "--python-include", dir / "python/include",
                            "--python-libdir", dir / "python/lib", "--isa", "none"},
                           home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());  // nothing to note: every path was given
  std::string t = dir / "site-packages/torch/lib";
  Loaded lib(dir / "k.so", {t + "/libtorch.so", t + "/libtorch_cpu.so", t + "/libtorch_python.so"});
  check_softmax(lib.symbol<SoftmaxFn>("kernel"));
}

TEST_CASE(
    "npu: a kernel builds against a fake Ascend SDK, loads, and its ACL call reaches the stub",
    "[e2e]") {
  TempDir home, dir;
  FakeAscend ascend(dir);
  fs::create_directories(dir / "python/include");
  std::map<std::string, std::string> env{{"ASCEND_HOME_PATH", ascend.sdk}};

  RunResult dry = run_kbuild({"--device", "npu", "--dry-run", example("npu/kernel.cpp"), "-o",
                              dir / "npu.so", "--torch-root", ascend.torch, "--python-include",
                              dir / "python/include", "--python-libdir", dir / "python/lib"},
                             home.str(), env);
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  for (const std::string& want :
       Strings{"-D USE_NPU", "-I" + ascend.sdk + "/include", "-I" + ascend.sdk + "/pkg_inc",
               "-I" + ascend.torch_npu + "/include/third_party/acl/inc", "-lascendcl",
               "-ltorch_npu", "-lruntime", "-L" + ascend.sdk + "/lib64",
               "-L" + ascend.torch_npu + "/lib", "-DBUILD_LIBTORCH=ON -Wno-unused-function"})
    CHECK(dry.out.find(want) != std::string::npos);
  // torch_npu's default backend (triton) never adds -march=native.
  CHECK(dry.out.find("-march=native") == std::string::npos);

  RunResult r = run_kbuild({"--device", "npu", example("npu/kernel.cpp"), "-o", dir / "npu.so",
                            "--torch-root", ascend.torch, "--python-include",
                            dir / "python/include", "--python-libdir", dir / "python/lib"},
                           home.str(), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Loaded lib(dir / "npu.so", ascend.libraries());
  CHECK(lib.symbol<int (*)()>("kernel_device_count")() == 8);  // 7 + the runtime stub's 1
  float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, c[3] = {};
  lib.symbol<void (*)(const float*, const float*, float*, int64_t)>("kernel_add")(a, b, c, 3);
  CHECK(c[2] == 33.0f);
}

TEST_CASE("npu: LIBTORCH_NPU_PATH overrides where libtorch_npu is linked from", "[e2e]") {
  TempDir home, dir;
  FakeAscend ascend(dir);
  RunResult r = run_kbuild(
      {"--device", "npu", "--dry-run", example("npu/kernel.cpp"), "-o", dir / "k.so",
       "--torch-root", ascend.torch, "--python-include", "/p/inc", "--python-libdir", "/p/lib"},
      home.str(), {{"ASCEND_HOME_PATH", ascend.sdk}, {"LIBTORCH_NPU_PATH", "/custom/npu lib"}});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("'-L/custom/npu lib'") != std::string::npos);
  CHECK(r.out.find("-L" + ascend.torch_npu + "/lib") == std::string::npos);
}

TEST_CASE("dry-run prints one line that a POSIX shell splits into exactly the argv that runs",
          "[e2e]") {
  TempDir home, dir;
  std::string weird = dir / "it's a \"dir\" with $HOME and spaces";
  write_file(weird + "/kernel.cpp", "extern \"C\" int f() { return 1; }\n");
  write_file(dir / "fake-g++",
             "#!/bin/sh\n"
             "for a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$ARGV_FILE\"\n"
             "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then shift; cp /bin/true \"$1\"; fi; "
             "shift; done\n",
             true);
  // --no-cache: a cache miss also asks the compiler for its search dirs.
  Strings args{weird + "/kernel.cpp",
               "-o",
               weird + "/kernel.so",
               "--cxx",
               dir / "fake-g++",
               "--no-torch",
               "--no-cache",
               "-I",
               weird + "/inc",
               "-D",
               "MSG=\"hi there\"",
               "-l",
               "m",
               "--extra-flags",
               "-DA='x y' -DB=$z"};
  std::map<std::string, std::string> env{{"ARGV_FILE", dir / "argv.bin"}};
  RunResult dry = run_kbuild(
      [&] {
        Strings a = args;
        a.push_back("--dry-run");
        return a;
      }(),
      home.str(), env);
  REQUIRE(dry.exit_code == 0);
  REQUIRE(dry.out.size() > 1);
  CHECK(std::count(dry.out.begin(), dry.out.end(), '\n') == 1);

  // What /bin/sh makes of the printed line.
  RunResult split =
      run({"/bin/sh", "-c", "eval \"set -- $1\"; for a in \"$@\"; do printf '%s\\0' \"$a\"; done",
           "sh", dry.out});
  REQUIRE(split.exit_code == 0);
  Strings from_shell = split_nul(split.out);

  // What actually ran.
  RunResult build = run_kbuild(args, home.str(), env);
  INFO(build.err);
  REQUIRE(build.exit_code == 0);
  // The script records its arguments; argv[0] (the compiler) is checked below.
  Strings ran{dir / "fake-g++"};
  for (const std::string& a : split_nul(read_file(dir / "argv.bin"))) ran.push_back(a);
  REQUIRE(ran.size() == from_shell.size());
  for (std::size_t i = 1; i < ran.size(); ++i) {
    if (from_shell[i] == weird + "/kernel.so") {
      // The only difference: the private work directory beside the output.
      CHECK(fs::path(ran[i]).parent_path().parent_path() == fs::path(weird));
      CHECK(fs::path(ran[i]).parent_path().filename().string().find(".kernel.so.kbuild-tmp.") == 0);
      CHECK(fs::path(ran[i]).filename() == "kernel.so");
    } else {
      CHECK(ran[i] == from_shell[i]);
    }
  }
  CHECK(from_shell[0] == dir / "fake-g++");
  CHECK(std::find(from_shell.begin(), from_shell.end(), "MSG=\"hi there\"") != from_shell.end());
  CHECK(std::find(from_shell.begin(), from_shell.end(), "-DA=x y") != from_shell.end());
  CHECK(std::find(from_shell.begin(), from_shell.end(), "-DB=$z") != from_shell.end());
  CHECK(read_file(weird + "/kernel.so") == read_file("/bin/true"));
}

TEST_CASE("options --json prints the device layer's 7 lists, what the upstream hook returns",
          "[e2e]") {
  TempDir home, dir;
  make_fake_torch(dir / "torch", false);
  RunResult r = run_kbuild({"options", "--device", "mps", "--aot", "--json", "--torch-root",
                            dir / "torch", "--python-include", "/p/i", "--python-libdir", "/p/l"},
                           home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::ordered_json::parse(r.out);
  Strings keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  CHECK(keys == Strings{"definitions", "include_dirs", "cflags", "ldflags", "libraries_dirs",
                        "libraries", "passthrough_args"});
  CHECK(j["definitions"] == nlohmann::ordered_json::array({" USE_MPS"}));
  CHECK(j["libraries_dirs"] == nlohmann::ordered_json::array({dir / "torch/lib"}));
}

TEST_CASE("devices lists built-ins and the shipped npu file; --config overrides it with a warning",
          "[e2e]") {
  TempDir home, dir;
  write_file(dir / "my-npu.json", "{\"device\": \"npu\", \"definitions\": [\"MY_NPU\"]}");
  RunResult r = run_kbuild({"devices", "--json"}, home.str());
  REQUIRE(r.exit_code == 0);
  auto list = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& d : list) by_name[d["name"]] = d;
  CHECK(by_name.count("cpu"));
  CHECK(by_name.count("xpu"));
  REQUIRE(by_name.count("npu"));
  CHECK(by_name["npu"]["source"] == source_root() + "/configs/devices/npu.json");
  // One word for it, as everywhere users read: a device file.
  CHECK(by_name["npu"]["kind"] == "device file");
  CHECK(by_name["cpu"]["kind"] == "built-in");

  RunResult o = run_kbuild(
      {"options", "--device", "npu", "--json", "--no-torch", "--config", dir / "my-npu.json"},
      home.str());
  INFO(o.err);
  REQUIRE(o.exit_code == 0);
  CHECK(nlohmann::json::parse(o.out)["definitions"] == nlohmann::json::array({"MY_NPU"}));
  CHECK(o.err.find("kbuild: warning: device 'npu' is already registered (from " + source_root() +
                   "/configs/devices/npu.json), overwriting with " + dir / "my-npu.json") !=
        std::string::npos);
}

TEST_CASE("--device-file registers a device file; --config, its older name, does the same",
          "[e2e]") {
  TempDir home, dir;
  write_file(dir / "acme.json", "{\"device\": \"acme\", \"definitions\": [\"ACME\"]}");
  std::vector<std::string> outputs;
  for (const char* flag : {"--device-file", "--config"}) {
    RunResult r = run_kbuild({"options", "--device", "acme", "--json", "--no-torch", "--strict",
                              flag, dir / "acme.json"},
                             home.str());
    INFO(flag << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out)["definitions"] == nlohmann::json::array({"ACME"}));
    outputs.push_back(r.out);
  }
  CHECK(outputs[0] == outputs[1]);
  // Without either, the device is unknown (--strict makes that an error).
  RunResult none =
      run_kbuild({"options", "--device", "acme", "--json", "--no-torch", "--strict"}, home.str());
  CHECK(none.exit_code != 0);
}

TEST_CASE("user config directories register devices: XDG and KBUILD_CONFIG_PATH", "[e2e]") {
  TempDir home, dir;
  write_file(home / ".config/kbuild/devices.d/acme.json",
             "{\"device\": \"acme\", \"libraries\": [\"acme\"]}");
  write_file(dir / "more/zeta.json",
             "{\"device\": \"zeta\", \"mode\": \"extend\", \"libraries\": [\"z\"]}");
  RunResult r = run_kbuild({"options", "--device", "acme", "--json", "--no-torch"}, home.str(),
                           {{"KBUILD_CONFIG_PATH", dir / "more"}});
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["libraries"] == nlohmann::json::array({"acme"}));
  RunResult z = run_kbuild({"devices"}, home.str(), {{"KBUILD_CONFIG_PATH", dir / "more"}});
  // name, kind (mode), description (none in this file), source
  CHECK(z.out.find("zeta\tdevice file (extend)\t\t" + dir / "more/zeta.json") != std::string::npos);
}

TEST_CASE("modes: compile-only object, precompiled header and preprocessed output are real files",
          "[e2e]") {
  TempDir home, dir;
  write_file(dir / "h.h", "#pragma once\ninline int twice(int x) { return 2 * x; }\n");
  write_file(dir / "k.cpp", "#include \"h.h\"\nextern \"C\" int f(int x) { return twice(x); }\n");
  RunResult pch = run_kbuild({"--no-torch", "--precompile", dir / "h.h"}, home.str());
  INFO(pch.err);
  REQUIRE(pch.exit_code == 0);
  CHECK(fs::file_size(dir / "h.h.gch") > 0);
  RunResult obj =
      run_kbuild({"--no-torch", "-c", dir / "k.cpp", "--include-pch", dir / "h.h"}, home.str());
  REQUIRE(obj.exit_code == 0);
  CHECK(read_file(dir / "k.o").substr(1, 3) == "ELF");
  RunResult pre =
      run_kbuild({"--no-torch", "--preprocess", dir / "k.cpp", "-o", dir / "k.i"}, home.str());
  REQUIRE(pre.exit_code == 0);
  CHECK(read_file(dir / "k.i").find("return 2 * x;") != std::string::npos);
  RunResult link = run_kbuild({"--no-torch", dir / "k.o", "-o", dir / "k.so"}, home.str());
  REQUIRE(link.exit_code == 0);
  Loaded lib(dir / "k.so", {});
  CHECK(lib.symbol<int (*)(int)>("f")(21) == 42);
}

TEST_CASE("several objects are linked into one library", "[e2e]") {
  TempDir home, dir;
  write_file(dir / "a.cpp", "extern \"C\" int a() { return 40; }\n");
  write_file(dir / "b.cpp", "extern \"C\" int a(); extern \"C\" int b() { return a() + 2; }\n");
  REQUIRE(run_kbuild({"--no-torch", "-c", dir / "a.cpp"}, home.str()).exit_code == 0);
  REQUIRE(run_kbuild({"--no-torch", "-c", dir / "b.cpp"}, home.str()).exit_code == 0);
  RunResult r =
      run_kbuild({"--no-torch", dir / "a.o", dir / "b.o", "-o", dir / "ab.so"}, home.str());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  Loaded lib(dir / "ab.so", {});
  CHECK(lib.symbol<int (*)()>("b")() == 42);
}

TEST_CASE("torch is discovered from python3's path once, then from the cache", "[e2e]") {
  if (run({"/bin/sh", "-c", "command -v python3"}).exit_code != 0) {
    WARN("python3 not installed: skipped");
    return;
  }
  TempDir home, dir;
  make_fake_torch(dir / "site/torch", false);
  std::map<std::string, std::string> env{{"PYTHONPATH", dir / "site"}};
  RunResult r = run_kbuild({"options", "--device", "cpu", "--json"}, home.str(), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["libraries_dirs"] ==
        nlohmann::json::array({dir / "site/torch/lib"}));
  bool cached = false;
  for (auto& e : fs::directory_iterator(home / ".cache/kbuild/discovery"))
    cached = cached || e.path().extension() == ".cbor";
  CHECK(cached);
  // The second run answers the same from the cache (unit tests check the
  // cache's hit and invalidation rules).
  RunResult again = run_kbuild({"options", "--device", "cpu", "--json"}, home.str(), env);
  CHECK(again.out == r.out);
}

TEST_CASE("devices shows the npu backends and their layer chains; --backend resolves one",
          "[e2e]") {
  TempDir home;
  RunResult r = run_kbuild({"devices"}, home.str());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("  backend ascendc: device -> ascendc\n") != std::string::npos);
  CHECK(r.out.find("  backend triton (default): device -> common -> triton\n") !=
        std::string::npos);
  CHECK(r.out.find("  backend dvm: device -> common -> dvm\n") != std::string::npos);
  RunResult o =
      run_kbuild({"options", "--device", "npu", "--backend", "ascendc", "--json", "--no-torch"},
                 home.str(), {{"ASCEND_HOME_PATH", "/opt/ascend"}});
  INFO(o.err);
  REQUIRE(o.exit_code == 0);
  // ascendc patches nothing in Inductor's C++ builds: npu has no options of
  // its own there (torch_npu 2.11, measured), and a note says so.
  CHECK(nlohmann::json::parse(o.out)["libraries"] == nlohmann::json::array());
  CHECK(o.err.find("backend ascendc: patches nothing") != std::string::npos);
  RunResult triton =
      run_kbuild({"options", "--device", "npu", "--backend", "triton", "--json", "--no-torch"},
                 home.str(), {{"ASCEND_HOME_PATH", "/opt/ascend"}});
  REQUIRE(triton.exit_code == 0);
  CHECK(nlohmann::json::parse(triton.out)["libraries"] ==
        nlohmann::json::array({"torch_npu", "runtime", "ascendcl"}));
  RunResult bad = run_kbuild({"options", "--device", "npu", "--backend", "cuda", "--no-torch"},
                             home.str(), {{"ASCEND_HOME_PATH", "/opt/ascend"}});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("has no backend 'cuda' (backends: ascendc, dvm, mlir, triton") !=
        std::string::npos);
}

TEST_CASE("installed kbuild: finds its device files and its load-check helper", "[e2e]") {
  // meson install into a scratch prefix, then run the installed copy from
  // elsewhere: npu.json comes from <prefix>/share/kbuild, --check-load runs
  // <prefix>/libexec/kbuild-load-check.
  const char* build_root = std::getenv("KBUILD_BUILD_ROOT");
  REQUIRE(build_root != nullptr);
  TempDir home, dest, dir;
  RunResult install = run({"/usr/bin/env", "meson", "install", "-C", build_root, "--no-rebuild",
                           "--quiet", "--destdir", dest.str()});
  INFO(install.out << install.err);
  REQUIRE(install.exit_code == 0);
  std::string bin;
  for (const auto& entry : fs::recursive_directory_iterator(dest.path()))
    if (entry.path().filename() == "kbuild" && entry.path().parent_path().filename() == "bin")
      bin = entry.path().string();
  REQUIRE_FALSE(bin.empty());
  RunResult devices = run({bin, "devices"}, {{"HOME", home.str()}}, {"KBUILD_DATA_DIR"});
  INFO(devices.err);
  CHECK(devices.exit_code == 0);
  CHECK(devices.out.find("npu\t") != std::string::npos);
  CHECK(devices.out.find(dest.str()) != std::string::npos);  // the installed npu.json
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 3; }\n");
  RunResult built = run({bin, "--no-torch", "--check-load", "--require-symbol", "f", dir / "k.cpp",
                         "-o", dir / "k.so"},
                        {{"HOME", home.str()}}, {"KBUILD_DATA_DIR"});
  INFO(built.err);
  CHECK(built.exit_code == 0);
  Loaded lib(dir / "k.so", {});
  CHECK(lib.symbol<int (*)()>("f")() == 3);
}
