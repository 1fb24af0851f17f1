// Wrong hits: every input g++ reads is covered by the key or the manifest,
// and an entry is stored only for what the compiler really read. Each case
// changes one input in a way today's cache missed and checks the built
// library's value with dlopen.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

bool hit(const RunResult& r) {
  return r.err.find("kbuild: info: cache: hit") != std::string::npos;
}

struct Kernel {
  TempDir home, dir;
  RunResult build(std::vector<std::string> extra = {}, std::map<std::string, std::string> env = {},
                  const std::string& out = "k.so") {
    std::vector<std::string> args{"--no-torch", dir / "k.cpp", "-o", dir / out, "-v"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run_kbuild(args, home.str(), std::move(env));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    return r;
  }
  int value(const std::string& out = "k.so") { return call_f(dir / out); }
};

}  // namespace

TEST_CASE("a header edited while the compiler runs is not stored under its new content",
          "[e2e][cache]") {
  Kernel k;
  write_file(k.dir / "h.h", "#define VALUE 1\n");
  write_file(k.dir / "k.cpp", "#include \"h.h\"\nextern \"C\" int f() { return VALUE; }\n");
  // Once (while edit-once exists): the compiler reads VALUE 1, and the
  // header says 2 before the build ends. The compiler itself never changes.
  write_file(k.dir / "edit-once", "");
  write_file(k.dir / "editing-g++",
             "#!/bin/sh\n/usr/bin/g++ \"$@\" || exit 1\nif [ -f \"" + k.dir / "edit-once" +
                 "\" ]; then rm \"" + k.dir / "edit-once" +
                 "\"; sleep 0.05; echo '#define VALUE 2' > \"" + k.dir / "h.h" + "\"; fi\n",
             true);
  RunResult first = k.build({"--cxx", k.dir / "editing-g++"});
  CHECK(k.value() == 1);
  // The header says 2, so must the library.
  RunResult second = k.build({"--cxx", k.dir / "editing-g++"});
  INFO(first.err << second.err);
  CHECK_FALSE(hit(second));
  CHECK(k.value() == 2);
}

TEST_CASE("a source edited after it was hashed is not stored under the old content",
          "[e2e][cache]") {
  Kernel k;
  const std::string one = "extern \"C\" int f() { return 1; }\n";
  write_file(k.dir / "k.cpp", one);
  // Once: between kbuild hashing the source and g++ reading it, it changes.
  write_file(k.dir / "edit-once", "");
  write_file(k.dir / "late-edit-g++",
             "#!/bin/sh\nif [ -f \"" + k.dir / "edit-once" + "\" ]; then rm \"" +
                 k.dir / "edit-once" + "\"; echo 'extern \"C\" int f() { return 2; }' > \"" +
                 k.dir / "k.cpp" + "\"; fi\nexec /usr/bin/g++ \"$@\"\n",
             true);
  k.build({"--cxx", k.dir / "late-edit-g++"});
  CHECK(k.value() == 2);
  write_file(k.dir / "k.cpp", one);  // back to the content the key was made of
  RunResult r = k.build({"--cxx", k.dir / "late-edit-g++"});
  INFO(r.err);
  CHECK_FALSE(hit(r));
  CHECK(k.value() == 1);
}

TEST_CASE("--pch: a header the prefix header includes changes, the kernel is rebuilt",
          "[e2e][cache]") {
  Kernel k;
  write_file(k.dir / "inner.h", "#define VALUE 1\n");
  write_file(k.dir / "pre.h", "#include \"" + k.dir / "inner.h" + "\"\n");
  write_file(k.dir / "k.cpp", "extern \"C\" int f() { return VALUE; }\n");
  k.build({"--pch", k.dir / "pre.h"});
  CHECK(k.value() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_file(k.dir / "inner.h", "#define VALUE 2\n");
  RunResult r = k.build({"--pch", k.dir / "pre.h"});
  INFO(r.err);
  CHECK_FALSE(hit(r));
  CHECK(k.value() == 2);
}

TEST_CASE("a header added earlier on the include path, shadowing the one read, is a miss",
          "[e2e][cache]") {
  Kernel k;
  write_file(k.dir / "b/h.h", "#define VALUE 1\n");
  fs::create_directories(k.dir / "a");
  write_file(k.dir / "k.cpp", "#include <h.h>\nextern \"C\" int f() { return VALUE; }\n");
  std::vector<std::string> flags{"-I", k.dir / "a", "-I", k.dir / "b"};
  k.build(flags);
  CHECK(hit(k.build(flags)));
  write_file(k.dir / "a/h.h", "#define VALUE 2\n");  // now found first
  RunResult r = k.build(flags);
  CHECK_FALSE(hit(r));
  CHECK(k.value() == 2);
}

TEST_CASE("a library found through LIBRARY_PATH changing is a miss", "[e2e][cache]") {
  Kernel k;
  auto archive = [&k](int value) {
    write_file(k.dir / "g.cpp", "extern \"C\" int g() { return " + std::to_string(value) + "; }\n");
    // (not "libg": glibc ships a libg.a of its own)
    RunResult c = run({"/usr/bin/g++", "-fPIC", "-c", k.dir / "g.cpp", "-o", k.dir / "g.o"});
    REQUIRE(c.exit_code == 0);
    fs::remove(k.dir / "libs/libkbg.a");
    fs::create_directories(k.dir / "libs");
    REQUIRE(run({"/usr/bin/ar", "rcs", k.dir / "libs/libkbg.a", k.dir / "g.o"}).exit_code == 0);
  };
  archive(1);
  write_file(k.dir / "k.cpp", "extern \"C\" int g();\nextern \"C\" int f() { return g(); }\n");
  std::map<std::string, std::string> env{{"LIBRARY_PATH", k.dir / "libs"}};
  k.build({"-l", "kbg"}, env);
  CHECK(k.value() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  archive(2);
  RunResult r = k.build({"-l", "kbg"}, env);
  CHECK_FALSE(hit(r));
  CHECK(k.value() == 2);
}

TEST_CASE("a truncated or emptied cache entry is dropped and rebuilt, never served",
          "[e2e][cache]") {
  Kernel k;
  write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 5; }\n");
  k.build();
  std::vector<fs::path> outputs;
  for (auto& e : fs::recursive_directory_iterator(k.home / ".cache/kbuild/objects"))
    if (e.path().filename() == "output") outputs.push_back(e.path());
  REQUIRE(outputs.size() == 1);
  fs::resize_file(outputs[0], 0);
  fs::remove(k.dir / "k.so");
  RunResult r = k.build();
  CHECK_FALSE(hit(r));
  CHECK(fs::file_size(k.dir / "k.so") > 0);
  CHECK(k.value() == 5);
  // The rebuilt entry serves again, whole.
  fs::remove(k.dir / "k.so");
  CHECK(hit(k.build()));
  CHECK(k.value() == 5);
}

TEST_CASE("--launcher ccache works with the output cache on (objects and libraries)",
          "[e2e][cache][launcher]") {
  if (!fs::exists("/usr/bin/ccache")) {
    WARN("ccache not installed: skipped");
    return;
  }
  Kernel k;
  write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 3; }\n");
  std::map<std::string, std::string> env{{"CCACHE_DIR", k.home / "ccache"}};
  k.build({"--launcher", "ccache", "-c"}, env, "k.o");
  CHECK(fs::file_size(k.dir / "k.o") > 0);
  CHECK(read_file(k.dir / "k.o")
            .rfind("\x7f"
                   "ELF",
                   0) == 0);
  k.build({"--launcher", "ccache"}, env);
  CHECK(k.value() == 3);
}

TEST_CASE("a launcher that exits 0 without compiling is a failure, and nothing is cached",
          "[e2e][cache][launcher]") {
  Kernel k;
  write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 4; }\n");
  write_file(k.dir / "k.so", "earlier\n");
  RunResult r = run_kbuild(
      {"--no-torch", k.dir / "k.cpp", "-o", k.dir / "k.so", "--launcher", "true"}, k.home.str());
  INFO(r.err);
  CHECK(r.exit_code == 5);
  CHECK(r.err.find("kbuild: error[compile]:") != std::string::npos);
  CHECK(read_file(k.dir / "k.so") == "earlier\n");
  // A plain build is not served whatever the launcher left.
  RunResult plain = k.build();
  CHECK_FALSE(hit(plain));
  CHECK(k.value() == 4);
}

TEST_CASE("the launcher is part of the key: a wrapper's build never serves a plain one",
          "[e2e][cache][launcher]") {
  Kernel k;
  write_file(k.dir / "k.cpp",
             "#ifndef V\n#define V 1\n#endif\nextern \"C\" int f() { return V; }\n");
  write_file(k.dir / "wrapper", "#!/bin/sh\nexec \"$@\" -DV=2\n", true);
  k.build({"--launcher", k.dir / "wrapper"});
  CHECK(k.value() == 2);
  RunResult plain = k.build();
  CHECK_FALSE(hit(plain));
  CHECK(k.value() == 1);
}

TEST_CASE("an output path with blanks: the dependency list goes nowhere else, and hits",
          "[e2e][cache]") {
  Kernel k;
  fs::create_directories(k.dir / "my dir");
  write_file(k.dir / "my dir/k.cpp", "extern \"C\" int f() { return 6; }\n");
  // Relative paths from the kernel's directory: g++ once split the
  // dependency file's name at the blank and appended to ./my.
  RunResult first =
      run({"/usr/bin/env", "-C", k.dir.str(), kbuild_binary(), "--no-torch", "my dir/k.cpp", "-o",
           "my dir/k.so", "-v"},
          {{"HOME", k.home.str()}, {"XDG_CACHE_HOME", k.home / ".cache"}}, {"KBUILD_CACHE_DIR"});
  INFO(first.err);
  CHECK(first.exit_code == 0);
  CHECK_FALSE(fs::exists(k.dir / "my"));
  fs::remove(k.dir / "my dir/k.so");
  RunResult second =
      run({"/usr/bin/env", "-C", k.dir.str(), kbuild_binary(), "--no-torch", "my dir/k.cpp", "-o",
           "my dir/k.so", "-v"},
          {{"HOME", k.home.str()}, {"XDG_CACHE_HOME", k.home / ".cache"}}, {"KBUILD_CACHE_DIR"});
  INFO(second.err);
  CHECK(hit(second));
  CHECK_FALSE(fs::exists(k.dir / "my"));
  CHECK(call_f(k.dir / "my dir/k.so") == 6);
}

TEST_CASE("a torch/ folder in the current directory does not answer for the installed torch",
          "[e2e][cache]") {
  if (!fs::exists("/usr/bin/python3")) {
    WARN("python3 not installed: skipped");
    return;
  }
  Kernel k;
  write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  TempDir project;
  make_fake_torch(project / "torch", true);
  write_file(project / "torch/__init__.py", "\n");
  RunResult r =
      run({"/usr/bin/env", "-C", project.str(), kbuild_binary(), "--device", "cpu", "--python",
           "/usr/bin/python3", "--dry-run", k.dir / "k.cpp", "-o", k.dir / "k.so"},
          {{"HOME", k.home.str()}, {"XDG_CACHE_HOME", k.home / ".cache"}},
          {"KBUILD_CACHE_DIR", "KBUILD_TORCH_ROOT", "PYTHONPATH"});
  INFO(r.out << r.err);
  CHECK(r.out.find(project.str()) == std::string::npos);
}

TEST_CASE("a pyenv-style shim: each project's .python-version gets its own answer",
          "[e2e][cache]") {
  Kernel k;
  write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
  TempDir pyenv, one, two;
  // Two "interpreters" that answer discovery's question with different torches.
  for (const std::string v : {"one", "two"}) {
    make_fake_torch(pyenv / ("torch-" + v), true);
    write_file(pyenv / ("python-" + v),
               "#!/bin/sh\necho '{\"torch_root\": \"" + pyenv / ("torch-" + v) +
                   "\", \"torch_npu_root\": null, \"include\": \"/usr/include\", \"libdir\": "
                   "\"/usr/lib\", \"sys_path\": []}'\n",
               true);
  }
  // The shim, like pyenv's: the version comes from .python-version.
  write_file(pyenv / "shims/python3",
             "#!/bin/sh\n# pyenv shim\nexec \"" + pyenv.str() +
                 "/python-$(cat .python-version)\" \"$@\"\n",
             true);
  write_file(one / ".python-version", "one");
  write_file(two / ".python-version", "two");
  auto dry = [&](const TempDir& project) {
    return run({"/usr/bin/env", "-C", project.str(), kbuild_binary(), "--device", "cpu", "--python",
                pyenv / "shims/python3", "--dry-run", k.dir / "k.cpp", "-o", k.dir / "k.so"},
               {{"HOME", k.home.str()}, {"XDG_CACHE_HOME", k.home / ".cache"}},
               {"KBUILD_CACHE_DIR", "KBUILD_TORCH_ROOT", "PYENV_VERSION"});
  };
  RunResult a = dry(one);
  RunResult b = dry(two);
  INFO(a.out << a.err << b.out << b.err);
  CHECK(a.out.find(pyenv / "torch-one") != std::string::npos);
  CHECK(b.out.find(pyenv / "torch-two") != std::string::npos);
  CHECK(b.out.find(pyenv / "torch-one") == std::string::npos);
}

TEST_CASE("behind a launcher too, a header added earlier on the include path is a miss",
          "[e2e][cache][launcher]") {
  Kernel k;
  write_file(k.dir / "b/h.h", "#define VALUE 1\n");
  fs::create_directories(k.dir / "a");
  write_file(k.dir / "k.cpp", "#include <h.h>\nextern \"C\" int f() { return VALUE; }\n");
  write_file(k.dir / "wrapper", "#!/bin/sh\nexec \"$@\"\n", true);
  std::vector<std::string> flags{"--launcher", k.dir / "wrapper", "-I", k.dir / "a",
                                 "-I",         k.dir / "b"};
  k.build(flags);
  CHECK(hit(k.build(flags)));
  write_file(k.dir / "a/h.h", "#define VALUE 2\n");  // now found first
  RunResult r = k.build(flags);
  CHECK_FALSE(hit(r));
  CHECK(k.value() == 2);
}
