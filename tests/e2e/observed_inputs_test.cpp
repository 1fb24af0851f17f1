// The fourth hostile pass's stale cases (issue 43), each in a plain build and
// in compiler mode: an input no model of the compiler listed, changed after
// the entry was stored, must be a miss, and the new binary must show it. The
// observer (src/observer) sees what the compiler, assembler and linker read,
// looked for and asked the environment; nothing here is special-cased.
// Last, a property: any change to a file the build opened or looked for in
// its own tree (an edit, a file created where one was absent, a removal)
// makes the next build miss.
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/kernel_case.hpp"
#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

using ObservedMode = KernelMode;
using ObservedCase = KernelCase;

bool observed_hit(const RunResult& r) {
  return cache_hit(r);
}

const char* observed_mode_name(ObservedMode m) {
  return kernel_mode_name(m);
}

}  // namespace

TEST_CASE("an inline-asm .include: the file the assembler reads is an input", "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    write_file(k.dir / "defs.s", ".set KB_VALUE, 5\n");
    write_file(k.dir / "k.cpp",
               "asm(\".include \\\"defs.s\\\"\\n.section .rodata\\n.globl kb_v\\nkb_v: .byte "
               "KB_VALUE\\n.previous\");\nextern \"C\" const char kb_v[];\n"
               "extern \"C\" int f() { return kb_v[0]; }\n");
    k.build({});
    CHECK(k.value() == 5);
    CHECK(observed_hit(k.build({})));
    k.rewrite("defs.s", ".set KB_VALUE, 6\n");
    CHECK_FALSE(observed_hit(k.build({})));
    CHECK(k.value() == 6);
  }
}

TEST_CASE("an .incbin spelled \".inc\" \"bin\" or with an escape is an input", "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    for (const std::string spelling : {"\".inc\" \"bin", "\".incbi\\x6e"}) {
      INFO(spelling);
      ObservedCase k(mode);
      write_file(k.dir / "data.bin", "A");
      write_file(k.dir / "k.cpp", "asm(\".section .rodata\\n.globl kb_blob\\nkb_blob: \" " +
                                      spelling +
                                      " \\\"data.bin\\\"\\n.previous\");\n"
                                      "extern \"C\" const char kb_blob[];\n"
                                      "extern \"C\" int f() { return kb_blob[0]; }\n");
      k.build({});
      CHECK(k.value() == 'A');
      CHECK(observed_hit(k.build({})));
      k.rewrite("data.bin", "B");
      CHECK_FALSE(observed_hit(k.build({})));
      CHECK(k.value() == 'B');
    }
  }
}

TEST_CASE("kbuild cc: .sx assembly is cached on what it pulls in", "[e2e][observed]") {
  ObservedCase k(ObservedMode::cc);
  write_file(k.dir / "data.bin", "C");
  write_file(k.dir / "k.sx",
             "#define SECTION .rodata\n.section SECTION\nkb_blob: .incbin "
             "\"data.bin\"\n.globl f\n.text\nf: movzbl kb_blob(%rip), %eax\nret\n");
  k.build({}, {}, "k.sx");
  CHECK(k.value() == 'C');
  CHECK(observed_hit(k.build({}, {}, "k.sx")));
  k.rewrite("data.bin", "D");
  CHECK_FALSE(observed_hit(k.build({}, {}, "k.sx")));
  CHECK(k.value() == 'D');
}

TEST_CASE("a -l library that is a linker script: what its INPUT names is an input",
          "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    auto archive = [&](int value) {
      write_file(k.dir / "lib/v.c", "int kb_v(void) { return " + std::to_string(value) + "; }\n");
      REQUIRE(run({"/usr/bin/gcc", "-c", "-fPIC", k.dir / "lib/v.c", "-o", k.dir / "lib/v.o"})
                  .exit_code == 0);
      fs::remove(k.dir / "lib/libbar_real.a");
      REQUIRE(
          run({"/usr/bin/ar", "rcs", k.dir / "lib/libbar_real.a", k.dir / "lib/v.o"}).exit_code ==
          0);
    };
    archive(7);
    write_file(k.dir / "lib/libbar.so", "INPUT(libbar_real.a)\n");
    write_file(k.dir / "k.cpp",
               "extern \"C\" int kb_v(); extern \"C\" int f() { return kb_v(); }\n");
    const std::vector<std::string> flags{"-L", "lib", "-lbar"};
    k.build(flags);
    CHECK(k.value() == 7);
    CHECK(observed_hit(k.build(flags)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    archive(8);
    CHECK_FALSE(observed_hit(k.build(flags)));
    CHECK(k.value() == 8);
  }
}

// Found on the GPU machine: its GCC's library directory holds a link to a
// libstdc++.so that is not there, so every Inductor link was uncacheable
// ("appeared while the compiler ran"). A dangling link is an absence: of
// what it names, which must stay absent, and of the link, which must stay.
TEST_CASE("a dangling link on the library path is an absence of what it names", "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    auto archive = [&](const std::string& dir, int value) {
      write_file(k.dir / (dir + "/v.c"),
                 "int kb_v(void) { return " + std::to_string(value) + "; }\n");
      REQUIRE(
          run({"/usr/bin/gcc", "-c", "-fPIC", k.dir / (dir + "/v.c"), "-o", k.dir / (dir + "/v.o")})
              .exit_code == 0);
      REQUIRE(run({"/usr/bin/ar", "rcs", k.dir / (dir + "/libkbv.a"), k.dir / (dir + "/v.o")})
                  .exit_code == 0);
    };
    archive("lib2", 1);
    fs::create_directories(k.dir / "dl");
    fs::create_symlink("../real/libkbv.a", k.dir / "dl/libkbv.a");
    write_file(k.dir / "k.cpp",
               "extern \"C\" int kb_v(); extern \"C\" int f() { return kb_v(); }\n");
    const std::vector<std::string> flags{"-Ldl", "-Llib2", "-lkbv"};
    const RunResult first = k.build(flags);
    CHECK(first.err.find("uncacheable") == std::string::npos);
    CHECK(k.value() == 1);
    CHECK(observed_hit(k.build(flags)));
    // What the link names appears: ld now takes it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    archive("real", 2);
    CHECK_FALSE(observed_hit(k.build(flags)));
    CHECK(k.value() == 2);
    CHECK(observed_hit(k.build(flags)));
  }
}

TEST_CASE("LD_RUN_PATH, which ld reads and writes as the RUNPATH, is an input", "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    write_file(k.dir / "k.cpp", "extern \"C\" int f() { return 1; }\n");
    k.build({});
    CHECK(observed_hit(k.build({})));
    RunResult with = k.build({}, {{"LD_RUN_PATH", "/opt/kb-run-path"}});
    CHECK_FALSE(observed_hit(with));
    CHECK(read_file(k.dir / "k.so").find("/opt/kb-run-path") != std::string::npos);
    CHECK(observed_hit(k.build({}, {{"LD_RUN_PATH", "/opt/kb-run-path"}})));
    CHECK_FALSE(observed_hit(k.build({})));
    CHECK(read_file(k.dir / "k.so").find("/opt/kb-run-path") == std::string::npos);
  }
}

TEST_CASE("a header that appears beside the header that quotes it is a miss", "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    write_file(k.dir / "inc/a.h", "#include \"b.h\"\n");
    write_file(k.dir / "other/b.h", "#define VALUE 1\n");
    write_file(k.dir / "k.cpp", "#include <a.h>\nextern \"C\" int f() { return VALUE; }\n");
    const std::vector<std::string> flags{"-I", "inc", "-I", "other"};
    k.build(flags);
    CHECK(observed_hit(k.build(flags)));
    k.rewrite("inc/b.h", "#define VALUE 2\n");  // beside a.h: found first now
    CHECK_FALSE(observed_hit(k.build(flags)));
    CHECK(k.value() == 2);
  }
}

TEST_CASE(
    "--pch: the header build's quoted includes resolve beside the header, and a new one "
    "shadowing them is seen, cached or not",
    "[e2e][observed]") {
  for (bool cached : {true, false}) {
    INFO((cached ? "with the cache" : "--no-cache"));
    ObservedCase k(ObservedMode::build);
    // pre.h quotes x.h, which lies beside it: g++ -include pre.h reads that one.
    write_file(k.dir / "pch/pre.h", "#include \"x.h\"\n");
    write_file(k.dir / "pch/x.h", "#define VALUE 3\n");
    write_file(k.dir / "k.cpp", "extern \"C\" int f() { return VALUE; }\n");
    std::vector<std::string> flags{"--pch", k.dir / "pch/pre.h"};
    if (!cached) flags.push_back("--no-cache");
    RunResult first = k.build(flags);
    INFO(first.err);
    CHECK(k.value() == 3);
    // Found through -I the first time; then a header appears beside pre.h.
    ObservedCase s(ObservedMode::build);
    write_file(s.dir / "pch/pre.h", "#include \"y.h\"\n");
    write_file(s.dir / "inc/y.h", "#define VALUE 4\n");
    write_file(s.dir / "k.cpp", "extern \"C\" int f() { return VALUE; }\n");
    std::vector<std::string> sflags{"--pch", s.dir / "pch/pre.h", "-I", "inc"};
    if (!cached) sflags.push_back("--no-cache");
    s.build(sflags);
    CHECK(s.value() == 4);
    s.rewrite("pch/y.h", "#define VALUE 5\n");
    RunResult again = s.build(sflags);
    INFO(again.err);
    CHECK(again.err.find("pch: reused") == std::string::npos);
    CHECK(s.value() == 5);
  }
}

TEST_CASE(
    "every read file and looked-for path of the build's own tree is checked: edit, create, "
    "remove",
    "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    write_file(k.dir / "inc1/.keep", "");
    write_file(k.dir / "inc2/h.h", "#include \"g.h\"\n#define VALUE (G + 1)\n");
    write_file(k.dir / "inc2/g.h", "#define G 1\n");
    write_file(k.dir / "k.cpp", "#include \"h.h\"\nextern \"C\" int f() { return VALUE; }\n");
    const std::vector<std::string> flags{"-I", "inc1", "-I", "inc2"};
    k.build(flags);
    REQUIRE(observed_hit(k.build(flags)));
    const nlohmann::json manifest = k.manifest();
    REQUIRE(manifest.contains("inputs"));
    const std::string root = fs::canonical(k.dir.path()).string();
    auto ours = [&](std::string path) {
      if (path.rfind('/', 0) != 0) path = root + "/" + path;
      return path.rfind(root + "/", 0) == 0 ? path.substr(root.size() + 1) : std::string();
    };
    int edited = 0, created = 0;
    // Each file read in the tree (but the source, which is keyed): edited,
    // a miss; put back, a hit again.
    for (const auto& input : manifest["inputs"]) {
      const std::string rel = ours(input[0].get<std::string>());
      if (rel.empty() || rel == "k.cpp") continue;
      INFO("edited " << rel);
      const std::string before = read_file(k.dir / rel);
      k.rewrite(rel, before + "\n");
      CHECK_FALSE(observed_hit(k.build(flags)));
      k.rewrite(rel, before);
      k.build(flags);
      CHECK(observed_hit(k.build(flags)));
      ++edited;
    }
    // Each path looked for in the tree and not found: created, a miss;
    // removed again, a hit.
    for (const auto& absent : manifest["absent"]) {
      const std::string rel = ours(absent.get<std::string>());
      if (rel.empty() || fs::exists(k.dir / fs::path(rel).parent_path()) == false) continue;
      INFO("created " << rel);
      k.rewrite(rel, "#define G 9\n#define VALUE 9\n");
      CHECK_FALSE(observed_hit(k.build(flags)));
      fs::remove(k.dir / rel);
      k.build(flags);
      CHECK(observed_hit(k.build(flags)));
      ++created;
    }
    CHECK(edited >= 2);   // h.h and g.h
    CHECK(created >= 2);  // h.h beside k.cpp and in inc1
    // Removed: a header read is gone, the build fails as g++ does.
    fs::remove(k.dir / "inc2/g.h");
    RunResult gone = k.build(flags, {}, "k.cpp", false);
    CHECK(gone.exit_code != 0);
    CHECK_FALSE(observed_hit(gone));
  }
}

namespace {

// Waits (at most 30 s) until `file` has been closed `times` after reading:
// the compiler's read, then EarlyDigests' look at it while the compile runs.
void observed_swap_wait_reads(const std::string& file, int times) {
  // On a thread of its own: no Catch assertion (the test's checks fail if
  // the swap comes too early).
  const int fd = ::inotify_init1(IN_CLOEXEC);
  if (fd < 0) return;
  if (::inotify_add_watch(fd, file.c_str(), IN_CLOSE_NOWRITE) < 0) {
    ::close(fd);
    return;
  }
  for (int seen = 0; seen < times;) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 30000) <= 0) break;
    alignas(inotify_event) char events[4096];
    const ssize_t n = ::read(fd, events, sizeof events);
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(events + at);
      seen += (event->mask & IN_CLOSE_NOWRITE) ? 1 : 0;
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  ::close(fd);
}

}  // namespace

TEST_CASE(
    "a header's directory link swapped to an older tree while the compiler runs: the build is "
    "not stored, so the next build compiles what the link names now",
    "[e2e][observed]") {
  ObservedCase k(ObservedMode::build);
  // Two trees made before the build; inc names v1 when the compiler reads
  // inc/x.h, v2 (whose files are as old) by the time the compile ends.
  write_file(k.dir / "v1/x.h", "#define VALUE 1\n");
  write_file(k.dir / "v2/x.h", "#define VALUE 2\n");
  fs::create_directory_symlink("v1", k.dir / "inc");
  write_file(k.dir / "k.cpp", "#include \"x.h\"\nextern \"C\" int f() { return VALUE; }\n");
  // The launcher waits, after the compile, for the swap: on a FIFO under
  // /dev, which is no input.
  struct Gate {
    std::string path = "/dev/shm/kbuild-test-swapped-" + std::to_string(::getpid());
    Gate() { REQUIRE(::mkfifo(path.c_str(), 0600) == 0); }
    ~Gate() { ::unlink(path.c_str()); }
  } gate;
  write_file(k.dir / "wrap", "#!/bin/sh\n\"$@\"\nrc=$?\nread done < " + gate.path + "\nexit $rc\n",
             true);
  const std::vector<std::string> flags{"-I", "inc", "--launcher", k.dir / "wrap"};
  std::thread swapper([&k, &gate] {
    observed_swap_wait_reads(k.dir / "v1/x.h", 2);
    fs::create_directory_symlink("v2", k.dir / "inc.new");
    fs::rename(k.dir / "inc.new", k.dir / "inc");
    std::ofstream(gate.path) << "\n";  // opened once the launcher reads it
  });
  RunResult first = k.build(flags);
  swapper.join();
  INFO(first.err);
  CHECK(k.value() == 1);
  CHECK(first.err.find("inc/x.h changed during the build") != std::string::npos);
  // The gate is a plain file now; inc names v2, so must the binary.
  ::unlink(gate.path.c_str());
  write_file(gate.path, "\n");
  RunResult again = k.build(flags);
  INFO(again.err);
  CHECK_FALSE(observed_hit(again));
  CHECK(k.value() == 2);
}

TEST_CASE(
    "a header that is a FIFO: what came through it cannot be checked again, so the build is not "
    "stored",
    "[e2e][observed]") {
  for (ObservedMode mode : kKernelModes) {
    INFO(observed_mode_name(mode));
    ObservedCase k(mode);
    REQUIRE(::mkfifo((k.dir / "v.h").c_str(), 0600) == 0);
    write_file(k.dir / "k.cpp", "#include \"v.h\"\nextern \"C\" int f() { return VALUE; }\n");
    for (int value : {1, 2}) {
      INFO("VALUE " << value);
      // Writes the header once the compiler opens it (never, on a hit).
      std::atomic<bool> built{false};
      std::thread feeder([&k, &built, value] {
        while (!built) {
          const int fd = ::open((k.dir / "v.h").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
          if (fd < 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
          }
          const std::string text = "#define VALUE " + std::to_string(value) + "\n";
          (void)!::write(fd, text.data(), text.size());  // k.value() checks it came
          ::close(fd);
          return;
        }
      });
      RunResult r = k.build({});
      built = true;
      feeder.join();
      CHECK_FALSE(observed_hit(r));
      CHECK(r.err.find("v.h, a FIFO") != std::string::npos);
      CHECK(k.value() == value);
    }
  }
}
