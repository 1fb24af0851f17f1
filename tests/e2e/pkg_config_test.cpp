// "pkg_config" end to end: the real pkg-config reads a test-made zeta.pc
// from PKG_CONFIG_PATH, and the kernel compiles against its header, links
// its library and loads; explain names the .pc file, the report records
// PKG_CONFIG_PATH.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

// An SDK "zeta" under `root`: include/zeta.h, lib/libzeta.so, and
// pkgconfig/zeta.pc naming both (version 3.2), the library's dir as rpath.
void make_zeta_sdk(const TempDir& root) {
  write_file(root / "sdk/include/zeta.h", "extern \"C\" int zeta_value();\n");
  compile_shared_library("extern \"C\" int zeta_value() { return 6; }\n",
                         root / "sdk/lib/libzeta.so");
  write_file(root / "pkgconfig/zeta.pc",
             "prefix=" + root / "sdk" +
                 "\n"
                 "Name: Zeta\n"
                 "Description: an accelerator SDK\n"
                 "Version: 3.2\n"
                 "Cflags: -I${prefix}/include -DZETA_SCALE=7\n"
                 "Libs: -L${prefix}/lib -lzeta -Wl,-rpath,${prefix}/lib\n");
}

}  // namespace

TEST_CASE("a device file's pkg_config package is compiled and linked through the real pkg-config",
          "[e2e][pkg_config]") {
  TempDir home, dir;
  make_zeta_sdk(dir);
  write_file(dir / "acc.json", "{\"device\": \"acc\",\n \"pkg_config\": [\"zeta >= 3\"]}\n");
  write_file(dir / "kernel.cpp",
             "#include <zeta.h>\n"
             "extern \"C\" int f() { return zeta_value() * ZETA_SCALE; }\n");
  const std::map<std::string, std::string> env{{"PKG_CONFIG_PATH", dir / "pkgconfig"}};
  const std::vector<std::string> device{"--no-torch", "--config", dir / "acc.json", "--device",
                                        "acc"};

  std::vector<std::string> build = device;
  build.insert(build.end(), {dir / "kernel.cpp", "-o", dir / "k.so", "--report", dir / "r.json"});
  RunResult built = run_kbuild(build, home.str(), env);
  INFO(built.err);
  REQUIRE(built.exit_code == 0);
  CHECK(call_f(dir / "k.so") == 42);  // zeta.h, -DZETA_SCALE=7, -lzeta and its rpath

  // The report records pkg-config's variables as the provider's inputs.
  nlohmann::json report = nlohmann::json::parse(read_file(dir / "r.json"));
  CHECK(report["environment"]["PKG_CONFIG_PATH"] == dir / "pkgconfig");
  CHECK(report["environment"].contains("PKG_CONFIG_LIBDIR"));

  // Each flag's provenance names the .pc file and the line it is written on.
  std::vector<std::string> explain{"explain"};
  explain.insert(explain.end(), device.begin(), device.end());
  explain.push_back(dir / "kernel.cpp");
  RunResult explained = run_kbuild(explain, home.str(), env);
  INFO(explained.out << explained.err);
  REQUIRE(explained.exit_code == 0);
  CHECK(explained.out.find("config acc pkg-config zeta  " + dir / "pkgconfig/zeta.pc:5") !=
        std::string::npos);  // Cflags:
  CHECK(explained.out.find("config acc pkg-config zeta  " + dir / "pkgconfig/zeta.pc:6") !=
        std::string::npos);  // Libs:

  // Another PKG_CONFIG_PATH, another answer: an older zeta is refused.
  write_file(dir / "old/zeta.pc", "Name: Zeta\nDescription: old\nVersion: 2.0\nCflags:\nLibs:\n");
  RunResult old = run_kbuild(build, home.str(), {{"PKG_CONFIG_PATH", dir / "old"}});
  CHECK(old.exit_code == 4);
  CHECK(old.err.find("pkg-config package 'zeta' is version 2.0") != std::string::npos);
}
