// The registry's contract, including the ten checks the upstream registry
// change (PR 190614) was verified with, one test each.
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/device_file.hpp"
#include "devices/device_file_load.hpp"
#include "devices/plugin.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "site/search.hpp"

using namespace kbuild;
using namespace kbuild_test;
using Strings = std::vector<std::string>;

namespace {

class MockProvider : public Provider {
 public:
  explicit MockProvider(std::string name = "mock") : name_(std::move(name)) {}
  OptionsResult options(const DeviceQuery& q, const ResolveContext&) const override {
    ++calls;
    if (fail) throw Error(ErrorKind::provider, "mock provider exploded");
    OptionsResult r;
    Origin o{Layer::device, name_, "", 0};
    r.options.add(OptionList::definitions, "USE_MOCK", o);
    r.options.add(OptionList::include_dirs, "/mock/include", o);
    r.options.add(OptionList::cflags, "fmock", o);
    r.options.add(OptionList::ldflags, "Wl,--mock", o);
    r.options.add(OptionList::libraries_dirs, "/mock/lib", o);
    r.options.add(OptionList::libraries, q.aot_mode ? "mock_aot" : "mock", o);
    r.options.add(OptionList::passthrough_args, "-mock", o);
    return r;
  }
  std::string source() const override { return name_ + ".cpp"; }
  std::string kind() const override { return "test"; }
  RegistrationMode mode() const override { return mode_; }

  mutable int calls = 0;
  bool fail = false;
  RegistrationMode mode_ = RegistrationMode::replace;

 private:
  std::string name_;
};

// A machine where every built-in device resolves: torch, CUDA, and an xpu
// with a SYCL root and a libze_loader.so on LD_LIBRARY_PATH.
struct Machine {
  TempDir dir;
  Paths paths;
  Environment env;
  Machine() {
    paths.torch_root = dir / "torch";
    paths.torch_npu_root = dir / "torch_npu";
    paths.cuda_home = dir / "cuda";
    fs::create_directories(dir / "cuda/lib64");
    write_file(dir / "ze/libze_loader.so.1", "");
    env.set("SYCL_HOME", dir / "sycl");
    env.set("LD_LIBRARY_PATH", dir / "ze");
    env.set("ASCEND_HOME_PATH", dir / "ascend");
    write_file(dir / "torch_npu/version.py", "__version__ = '2.11.0.post1'\n");
  }
  ResolveContext ctx() const { return ResolveContext{paths, env}; }
};

Strings values(const OptionsResult& r, OptionList l) {
  return r.options.values(l);
}

bool same_lists(const OptionsResult& a, const OptionsResult& b) {
  for (OptionList l : kAllOptionLists)
    if (a.options.values(l) != b.options.values(l)) return false;
  return true;
}

void register_npu(Registry& registry) {
  DeviceFile npu = load_device_file(source_root() + "/configs/devices/npu.json");
  registry.register_device("npu", make_provider(std::move(npu)));
}

// The npu options as a torch_npu process (its default backend) has them.
OptionsResult in_npu_process(const Registry& registry, const DeviceQuery& q, const Machine& m) {
  ProcessPlugins plugins =
      activate_plugins(registry, PluginRequest{{}, q.device_type, ""}, m.ctx());
  return device_options_in_process(registry, plugins, q, m.ctx(), false);
}

}  // namespace

TEST_CASE("upstream check 1: registering a mock device and querying returns exactly its tuple",
          "[unit][registry][upstream]") {
  Machine m;
  Registry registry;
  auto mock = std::make_shared<MockProvider>();
  registry.register_device("mockdev", mock);
  MockProvider reference;
  for (bool aot : {false, true}) {
    OptionsResult got = registry.resolve(DeviceQuery{"mockdev", aot, false}, m.ctx(), false);
    CHECK(same_lists(got, reference.options(DeviceQuery{"mockdev", aot, false}, m.ctx())));
  }
  CHECK(mock->calls == 2);
}

TEST_CASE("upstream check 2: registering the same device twice emits one warning",
          "[unit][registry][upstream]") {
  Registry registry;
  registry.register_device("mockdev", std::make_shared<MockProvider>("first"));
  CHECK(registry.warnings().empty());
  registry.register_device("mockdev", std::make_shared<MockProvider>("second"));
  REQUIRE(registry.warnings().size() == 1);
  CHECK(registry.warnings()[0] ==
        "device 'mockdev' is already registered (from first.cpp), overwriting with second.cpp");
  Machine m;
  OptionsResult got = registry.resolve(DeviceQuery{"mockdev"}, m.ctx(), false);
  CHECK(got.options.entries(OptionList::definitions)[0].origin.provider == "second");
}

TEST_CASE("upstream check 3: an unknown device adds nothing to cuda results",
          "[unit][registry][upstream]") {
  Machine m;
  Registry plain, with_mock;
  with_mock.register_device("mockdev", std::make_shared<MockProvider>());
  for (bool co : {false, true}) {
    DeviceQuery q{"cuda", false, co};
    CHECK(same_lists(plain.resolve(q, m.ctx(), false), with_mock.resolve(q, m.ctx(), false)));
  }
  CHECK(values(with_mock.resolve(DeviceQuery{"cuda"}, m.ctx(), false), OptionList::definitions) ==
        Strings{" USE_CUDA"});
}

TEST_CASE("upstream check 4: an unknown device adds nothing to xpu results",
          "[unit][registry][upstream]") {
  Machine m;
  Registry plain, with_mock;
  with_mock.register_device("mockdev", std::make_shared<MockProvider>());
  OptionsResult got = with_mock.resolve(DeviceQuery{"xpu"}, m.ctx(), false);
  CHECK(same_lists(plain.resolve(DeviceQuery{"xpu"}, m.ctx(), false), got));
  CHECK(values(got, OptionList::definitions) == Strings{" USE_XPU"});
  CHECK(values(got, OptionList::libraries) == Strings{"ze_loader", "sycl", "torch_xpu"});
  CHECK(values(got, OptionList::cflags) == Strings{"Wno-comment"});
}

TEST_CASE("upstream check 5: an unknown device adds nothing to mps results",
          "[unit][registry][upstream]") {
  Machine m;
  Registry plain, with_mock;
  with_mock.register_device("mockdev", std::make_shared<MockProvider>());
  OptionsResult got = with_mock.resolve(DeviceQuery{"mps"}, m.ctx(), false);
  CHECK(same_lists(plain.resolve(DeviceQuery{"mps"}, m.ctx(), false), got));
  CHECK(values(got, OptionList::definitions) == Strings{" USE_MPS"});
}

TEST_CASE("upstream check 6: an unknown device does not leak the mock's definitions",
          "[unit][registry][upstream]") {
  Machine m;
  Registry registry;
  registry.register_device("mockdev", std::make_shared<MockProvider>());
  OptionsResult got = registry.resolve(DeviceQuery{"somethingelse"}, m.ctx(), false);
  CHECK(values(got, OptionList::definitions).empty());
  CHECK(values(got, OptionList::libraries).empty());
  CHECK(values(got, OptionList::libraries_dirs) == Strings{*m.paths.torch_root + "/lib"});
  REQUIRE(got.notes.size() == 1);
  CHECK(got.notes[0].find("unknown device 'somethingelse'") != std::string::npos);
}

TEST_CASE("upstream check 7: after NPU registration, USE_NPU is in the definitions",
          "[unit][registry][upstream]") {
  Machine m;
  Registry registry;
  CHECK(values(registry.resolve(DeviceQuery{"npu"}, m.ctx(), false), OptionList::definitions)
            .empty());
  register_npu(registry);
  CHECK(values(registry.resolve(DeviceQuery{"npu"}, m.ctx(), false), OptionList::definitions) ==
        Strings{"USE_NPU"});
}

TEST_CASE("upstream check 8: the NPU include paths are right", "[unit][registry][upstream]") {
  Machine m;
  Registry registry;
  register_npu(registry);
  const std::string t = *m.paths.torch_root, n = *m.paths.torch_npu_root, a = m.dir / "ascend";
  CHECK(values(in_npu_process(registry, DeviceQuery{"npu"}, m), OptionList::include_dirs) ==
        Strings{t + "/include", t + "/include/torch/csrc/api/include", t + "/include/TH",
                t + "/include/THC", n + "/include/third_party/acl/inc", a + "/include",
                a + "/pkg_inc", a + "/pkg_inc/profiling", a + "/include/experiment",
                a + "/include/experiment/msprof", n + "/include"});
}

TEST_CASE("upstream check 9: the NPU libraries are right (ascendcl, torch_npu)",
          "[unit][registry][upstream]") {
  Machine m;
  Registry registry;
  register_npu(registry);
  OptionsResult got = in_npu_process(registry, DeviceQuery{"npu", true, true}, m);
  CHECK(values(got, OptionList::libraries) == Strings{"torch_npu", "runtime", "ascendcl"});
  CHECK(values(got, OptionList::libraries_dirs) == Strings{*m.paths.torch_root + "/lib",
                                                           *m.paths.torch_npu_root + "/lib",
                                                           m.dir / "ascend/lib64"});
}

TEST_CASE("upstream check 10: the NPU passthrough arguments are right",
          "[unit][registry][upstream]") {
  Machine m;
  Registry registry;
  register_npu(registry);
  CHECK(values(in_npu_process(registry, DeviceQuery{"npu"}, m), OptionList::passthrough_args) ==
        Strings{"-DBUILD_LIBTORCH=ON -Wno-unused-function"});
}

TEST_CASE("npu: ASCEND_HOME_PATH unset fails lazily with the adapter's message",
          "[unit][registry]") {
  Machine m;
  m.env.unset("ASCEND_HOME_PATH");
  Registry registry;
  register_npu(registry);  // registering needs nothing
  CHECK_NOTHROW(in_npu_process(registry, DeviceQuery{"cpu"}, m));
  try {
    in_npu_process(registry, DeviceQuery{"npu"}, m);
    FAIL("expected a provider error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::provider);
    std::string msg = e.what();
    CHECK(msg.find("device 'npu'") == 0);
    CHECK(msg.find("npu.json:") != std::string::npos);
    CHECK(msg.find("Could not find ASCEND_HOME_PATH in env. Please run set_env.sh first.") !=
          std::string::npos);
  }
}

TEST_CASE("npu: LIBTORCH_NPU_PATH overrides the torch_npu lib dir", "[unit][registry]") {
  Machine m;
  m.env.set("LIBTORCH_NPU_PATH", "/custom/torch_npu/lib");
  Registry registry;
  register_npu(registry);
  CHECK(values(in_npu_process(registry, DeviceQuery{"npu"}, m), OptionList::libraries_dirs)[1] ==
        "/custom/torch_npu/lib");
}

TEST_CASE("npu: entries needing an unknown torch_npu root are left out with a note each",
          "[unit][registry]") {
  Machine m;
  m.paths.torch_npu_root.reset();
  Registry registry;
  register_npu(registry);
  OptionsResult got = in_npu_process(registry, DeviceQuery{"npu"}, m);
  // No torch_npu, so no version.py, no torch version and no profile: the
  // newest known numbered release (2.13.0), whose lists name the torch_npu
  // root three times (every device's include dir, npu's own, its lib dir).
  CHECK(values(got, OptionList::include_dirs).size() == 9);
  CHECK(values(got, OptionList::libraries_dirs).size() == 2);
  REQUIRE(got.notes.size() == 3);
  for (const std::string& note : got.notes)
    CHECK(note.find("torch_npu_root is unknown") != std::string::npos);
}

TEST_CASE("a failing provider is an error naming it, never swallowed", "[unit][registry]") {
  Machine m;
  Registry registry;
  auto mock = std::make_shared<MockProvider>();
  mock->fail = true;
  registry.register_device("mockdev", mock);
  CHECK_THROWS_WITH(registry.resolve(DeviceQuery{"mockdev"}, m.ctx(), false),
                    "mock provider exploded");
}

TEST_CASE("--strict turns an unknown device into a usage error listing the known ones",
          "[unit][registry]") {
  Machine m;
  Registry registry;
  try {
    registry.resolve(DeviceQuery{"nosuch"}, m.ctx(), true);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("cpu, cuda, xpu, mps") != std::string::npos);
  }
  CHECK_NOTHROW(registry.resolve(DeviceQuery{"cpu"}, m.ctx(), true));
}

TEST_CASE("extend mode appends to the built-in device; replace mode replaces it",
          "[unit][registry]") {
  Machine m;
  Registry extend, replace;
  auto extra = std::make_shared<MockProvider>();
  extra->mode_ = RegistrationMode::extend;
  extend.register_device("cuda", extra);
  replace.register_device("cuda", std::make_shared<MockProvider>());
  CHECK(values(extend.resolve(DeviceQuery{"cuda"}, m.ctx(), false), OptionList::libraries) ==
        Strings{"cuda", "torch_cuda", "mock"});
  CHECK(values(replace.resolve(DeviceQuery{"cuda"}, m.ctx(), false), OptionList::libraries) ==
        Strings{"mock"});
}

TEST_CASE("the built-in branch runs first: a registered xpu still fails without ze_loader",
          "[unit][registry]") {
  Machine m;
  m.env.set("LD_LIBRARY_PATH", m.dir / "nothing-here");
  Registry registry;
  registry.register_device("xpu", std::make_shared<MockProvider>());
  CHECK_THROWS_WITH(registry.resolve(DeviceQuery{"xpu"}, m.ctx(), false),
                    Catch::Contains("ze_loader"));
}

TEST_CASE("list() shows built-ins, registrations and what each overrode", "[unit][registry]") {
  Registry registry;
  registry.register_device("cuda", std::make_shared<MockProvider>("a"));
  registry.register_device("npu", std::make_shared<MockProvider>("b"));
  registry.register_device("npu", std::make_shared<MockProvider>("c"));
  auto list = registry.list();
  std::map<std::string, DeviceListing> by_name;
  for (const auto& d : list) by_name[d.name] = d;
  CHECK(by_name.size() == 5);
  CHECK(by_name["cpu"].source == "built-in");
  CHECK(by_name["cuda"].overridden == Strings{"built-in"});
  CHECK(by_name["npu"].source == "c.cpp");
  CHECK(by_name["npu"].overridden == Strings{"b.cpp"});
}

namespace {
OptionsResult resolve(const std::string& device, const Paths& paths, const Environment& env) {
  Registry registry;
  return registry.resolve(DeviceQuery{device}, ResolveContext{paths, env}, false);
}
}  // namespace

TEST_CASE(
    "cuda: lib64 is rewritten to the real dir of libcudart_static.a plus stubs when CUDA_HOME is "
    "given",
    "[unit][builtin]") {
  TempDir dir;
  std::string real = dir / "cuda/targets/x86_64-linux/lib";
  fs::create_directories(real + "/stubs");
  write_file(real + "/libcudart_static.a", "");
  fs::create_directory_symlink("targets/x86_64-linux/lib", dir / "cuda/lib64");
  Paths paths;
  paths.torch_root = dir / "torch";
  paths.cuda_home = dir / "cuda";
  paths.cuda_home_explicit = true;
  Environment env;
  OptionsResult r = resolve("cuda", paths, env);
  CHECK(r.options.values(OptionList::libraries_dirs) ==
        Strings{dir / "torch/lib", real, real + "/stubs"});
  CHECK(r.options.values(OptionList::include_dirs) == Strings{dir / "cuda/include"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"cuda", "torch_cuda"});
  paths.cuda_home_explicit = false;  // like Inductor without CUDA_HOME: no rewrite
  CHECK(resolve("cuda", paths, env).options.values(OptionList::libraries_dirs) ==
        Strings{dir / "torch/lib", dir / "cuda/lib64"});
}

TEST_CASE("cuda: lib is used when lib64 is missing; cudnn and CUDA_INC_PATH are added",
          "[unit][builtin]") {
  TempDir dir;
  fs::create_directories(dir / "cuda/lib");
  Paths paths;
  paths.cuda_home = dir / "cuda";
  Environment env;
  env.set("CUDNN_HOME", "/opt/cudnn");
  env.set("CUDA_INC_PATH", "/opt/cuda-inc");
  OptionsResult r = resolve("cuda", paths, env);
  CHECK(r.options.values(OptionList::libraries_dirs) ==
        Strings{dir / "cuda/lib", "/opt/cudnn/lib"});
  CHECK(r.options.values(OptionList::include_dirs) ==
        Strings{dir / "cuda/include", "/opt/cuda-inc", "/opt/cudnn/include"});
  // No torch: torch_cuda is left out, with a note.
  CHECK(r.options.values(OptionList::libraries) == Strings{"cuda"});
  CHECK(r.notes.size() == 1);
}

TEST_CASE("cuda on a ROCm torch: USE_ROCM, __HIP_PLATFORM_AMD__ and torch_hip", "[unit][builtin]") {
  Paths paths;
  paths.torch_root = "/t";
  paths.torch_is_rocm = true;
  paths.rocm_home = "/opt/rocm";
  OptionsResult r = resolve("cuda", paths, Environment{});
  CHECK(r.options.values(OptionList::definitions) == Strings{" USE_ROCM", " __HIP_PLATFORM_AMD__"});
  CHECK(r.options.values(OptionList::libraries) == Strings{"torch_hip"});
  CHECK(r.options.values(OptionList::include_dirs) == Strings{"/opt/rocm/include"});
}

TEST_CASE("xpu fails clearly without a SYCL runtime or without ze_loader", "[unit][builtin]") {
  TempDir dir;
  Paths paths;
  Environment env;
  env.set("LD_LIBRARY_PATH", dir.str());
  CHECK_THROWS_WITH(resolve("xpu", paths, env), Catch::Contains("SYCL runtime is not detected"));
  env.set("SYCL_HOME", "/opt/intel/sycl");
  if (!find_shared_library("ze_loader", Environment{})) {  // a machine without the real driver
    CHECK_THROWS_WITH(resolve("xpu", paths, env), Catch::Contains("libze_loader.so not found"));
  }
  write_file(dir / "libze_loader.so.1", "");
  OptionsResult r = resolve("xpu", paths, env);
  CHECK(r.options.values(OptionList::include_dirs) ==
        Strings{"/opt/intel/sycl/include", "/opt/intel/sycl/include/sycl"});
  CHECK(r.options.values(OptionList::libraries_dirs) == Strings{"/opt/intel/sycl/lib"});
}

TEST_CASE("find_shared_library searches LD_LIBRARY_PATH entries in order", "[unit][builtin]") {
  TempDir a, b;
  write_file(b / "libfoo_kbuild_test.so", "");
  Environment env;
  env.set("LD_LIBRARY_PATH", a.str() + "::" + b.str());
  CHECK(find_shared_library("foo_kbuild_test", env) == b.str());
  CHECK_FALSE(find_shared_library("foo_kbuild", env).has_value());
}
