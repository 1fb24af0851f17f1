// `kbuild --isa auto` as Inductor picks: the CPU's best ISA whose probe
// builds with the compiler and torch's headers (issue 15, item 5).
#include <catch2/catch.hpp>
#include <fstream>

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

}  // namespace

TEST_CASE("--isa auto drops an ISA whose probe does not build with torch's headers", "[e2e][isa]") {
  if (!cpu_has_avx512()) {
    WARN("this CPU has no AVX512: nothing to drop");
    return;
  }
  TempDir dir;
  const std::string torch = dir / "torch";
  make_fake_torch(torch, true);
  // A torch built without Sleef's AVX512 header: its vec headers fail for AVX512.
  const std::string vec = torch + "/include/ATen/cpu/vec/";
  fs::create_directories(vec);
  write_file(vec + "functional.h", "#pragma once\n");
  write_file(vec + "vec.h",
             "#pragma once\n#ifdef CPU_CAPABILITY_AVX512\n#error sleef.h: No such file\n#endif\n"
             "namespace at::vec { template <class T> struct Vectorized {\n"
             "  explicit Vectorized(T v) : v_(v) {}\n"
             "  Vectorized exp() const { return *this; }\n"
             "  void store(T* out) const { out[0] = v_; }\n  T v_; }; }\n");
  write_file(dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  std::vector<std::string> args = {"--torch-root", torch,         "--dry-run", "-v",        "--cxx",
                                   "g++",          dir / "k.cpp", "-o",        dir / "k.so"};
  RunResult r = run_kbuild(args, dir / "home", {{"TMPDIR", dir.str()}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("-D CPU_CAPABILITY_AVX2") != std::string::npos);
  CHECK(r.out.find("-mavx2 -mfma -mf16c") != std::string::npos);
  CHECK(r.out.find("avx512") == std::string::npos);
  CHECK(r.err.find("probes do not build with g++") != std::string::npos);
  // The answers are cached: the same plan again, without building a probe.
  RunResult again = run_kbuild(args, dir / "home", {{"TMPDIR", dir.str()}});
  CHECK(again.out == r.out);
  CHECK(fs::exists(dir / "home"));
}
