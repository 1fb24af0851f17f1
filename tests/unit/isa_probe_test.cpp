// --isa auto as Inductor picks: real g++ builds kbuild's probes against a
// fake torch whose headers decide what compiles (a header that #errors for
// AVX512 stands for a torch built without Sleef's AVX512 header).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>

#include "devices/profile.hpp"
#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"
#include "site/isa_probe.hpp"
#include "support/test_support.hpp"
#include "util/parsed_file_cache.hpp"
#include "util/process.hpp"

using namespace kbuild;
using namespace kbuild_test;

namespace {

// A CPU with AVX512, VNNI and BF16 (no AMX): the probes only compile, so
// the machine running the test need not have them.
CpuFeatures avx512_cpu() {
  return CpuFeatures{
      "x86_64",
      {"avx2", "fma", "avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_vnni", "avx512_bf16"},
      0};
}

// How ATen's AVX512 vec headers fail in the fake torch.
enum class Avx512 { fine, missing_header, unloadable };

// ATen's vec headers, reduced to what the probe uses. `missing_header`:
// including them for AVX512 fails, as a torch without sleef.h does;
// `unloadable`: AVX512's exp calls a function nothing defines, so the probe
// builds but does not load, as Debian's torch with libsleef-dev (the
// probe needs Sleef_expf16_u10, which no library it links exports to it).
void add_vec_headers(const std::string& torch_root, Avx512 avx512) {
  const std::string vec = torch_root + "/include/ATen/cpu/vec/";
  fs::create_directories(vec);
  write_file(vec + "functional.h", "#pragma once\n");
  write_file(
      vec + "vec.h",
      std::string("#pragma once\n") +
          (avx512 == Avx512::missing_header
               ? "#ifdef CPU_CAPABILITY_AVX512\n#error sleef.h: No such file or directory\n"
                 "#endif\n"
               : "") +
          "extern \"C\" float kbuild_test_sleef_expf16(float);\n"
          "namespace at::vec {\n"
          "template <class T> struct Vectorized {\n"
          "  explicit Vectorized(T v) : v_(v) {}\n" +
          (avx512 == Avx512::unloadable
               ? "#ifdef CPU_CAPABILITY_AVX512\n"
                 "  Vectorized exp() const { return Vectorized(kbuild_test_sleef_expf16(v_)); }\n"
                 "#else\n"
                 "  Vectorized exp() const { return *this; }\n"
                 "#endif\n"
               : "  Vectorized exp() const { return *this; }\n") +
          "  void store(T* out) const { out[0] = v_; }\n"
          "  T v_;\n"
          "};\n"
          "}  // namespace at::vec\n");
}

struct ProbeFixture {
  TempDir dir;
  std::string torch = dir / "torch";
  std::string log = dir / "compiler.log";
  Environment env = Environment::from_process();
  Paths paths;

  explicit ProbeFixture(Avx512 avx512) {
    make_fake_torch(torch, true);
    add_vec_headers(torch, avx512);
    paths.torch_root = torch;
    env.set("TMPDIR", dir.str());
  }

  // A compiler that logs each run, then is g++ (or, with `hang`, blocks on
  // a FIFO nobody writes until its time-out kills it).
  std::string logging_compiler(bool hang = false) {
    std::string path = dir / (hang ? "hanging-cxx" : "logging-cxx");
    const std::string then =
        hang ? "exec cat '" + never_fifo(dir / "never") + "'\n" : std::string("exec g++ \"$@\"\n");
    write_file(path, "#!/bin/sh\necho run >> '" + log + "'\n" + then, true);
    return path;
  }

  // Probes as the profile of `line` builds them, with its ISA classes.
  IsaProbeSettings settings(const std::string& compiler, const std::string& cache = "",
                            const std::string& line = "2.11") {
    IsaProbeSettings s;
    s.compiler = compiler;
    s.torch_root = torch;
    s.cache_dir = cache;
    s.loader = {fs::path(kbuild_binary()).parent_path() / "kbuild-load-check"};
    auto profile =
        std::make_shared<const Profile>(load_profile(source_root() + "/configs/profiles", line));
    s.line = isa_line(*profile);
    s.command = [this, compiler, profile](const Isa& isa, const std::string& source,
                                          const std::string& output) {
      BuildRequest request;
      request.compiler = compiler;
      request.profile = profile;
      return isa_probe_command(request, paths, isa, source, output);
    };
    return s;
  }

  std::size_t logged_runs() const {
    if (!fs::exists(log)) return 0;
    std::string text = read_file(log);
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }
};

bool any_note_has(const IsaProbeResult& r, const std::string& text) {
  for (const std::string& note : r.notes)
    if (note.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("auto takes the best ISA whose probes build", "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  IsaProbeResult r = probe_isa(avx512_cpu(), f.env, f.settings("g++"));
  CHECK(r.isa.kind == IsaKind::avx512_vnni);
  CHECK_FALSE(r.isa.avx512_bf16);  // VNNI checks it, its flags never carry it
  CHECK(r.notes.empty());
  CHECK(r.compiler_runs == 3);  // VecAVX512VNNI's checks: vectorized, AVX512-BF16, VNNI
  // AMX with BF16: its vectorized, BF16, VNNI and AMX probes all build.
  CpuFeatures amx_cpu = avx512_cpu();
  amx_cpu.flags.insert({"amx_tile", "amx_bf16", "amx_int8"});
  IsaProbeResult amx = probe_isa(amx_cpu, f.env, f.settings("g++"));
  CHECK(amx.isa.kind == IsaKind::amx);
  CHECK(amx.isa.avx512_bf16);
  CHECK_FALSE(amx.isa.amx_fp16);
  CHECK(amx.compiler_runs == 4);
}

TEST_CASE("an AVX512 probe that fails to build takes the next ISA down, with a note",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::missing_header);
  IsaProbeResult r = probe_isa(avx512_cpu(), f.env, f.settings("g++"));
  CHECK(r.isa.kind == IsaKind::avx2);
  CHECK_FALSE(r.isa.avx512_bf16);
  INFO((r.notes.empty() ? std::string() : r.notes.front()));
  CHECK(any_note_has(r, "the avx512_vnni, avx512 probes do not build or load with g++"));
  CHECK(any_note_has(r, "using avx2 (--isa avx512_vnni forces it)"));
  // With nothing usable: none.
  CpuFeatures avx512_only = avx512_cpu();
  avx512_only.flags.erase("avx2");
  CHECK(probe_isa(avx512_only, f.env, f.settings("g++")).isa.kind == IsaKind::none);
}

TEST_CASE("an AVX512 probe that builds but does not load takes the next ISA down, as Inductor",
          "[unit][isa_probe]") {
  // Inductor's check_build also loads each probe (in a child, torch's lib/
  // first on LD_LIBRARY_PATH): Debian sid's torch 2.14.1 with libsleef-dev
  // builds the AVX512 probes, fails to load them and uses no ISA.
  ProbeFixture f(Avx512::unloadable);
  IsaProbeResult r = probe_isa(avx512_cpu(), f.env, f.settings("g++"));
  CHECK(r.isa.kind == IsaKind::avx2);
  INFO((r.notes.empty() ? std::string() : r.notes.front()));
  CHECK(any_note_has(r, "the avx512_vnni, avx512 probes do not build or load with g++"));
  // Without a loader, as before: built is usable.
  IsaProbeSettings build_only = f.settings("g++");
  build_only.loader.clear();
  CHECK(probe_isa(avx512_cpu(), f.env, build_only).isa.kind == IsaKind::avx512_vnni);
}

TEST_CASE("ATEN_CPU_CAPABILITY chooses among the ISAs whose probes build, as Inductor",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::missing_header);
  f.env.set("ATEN_CPU_CAPABILITY", "default");
  IsaProbeResult none = probe_isa(avx512_cpu(), f.env, f.settings("g++"));
  CHECK(none.isa.kind == IsaKind::none);
  CHECK(none.compiler_runs == 0);
  f.env.set("ATEN_CPU_CAPABILITY", "avx2");
  IsaProbeResult avx2 = probe_isa(avx512_cpu(), f.env, f.settings("g++"));
  CHECK(avx2.isa.kind == IsaKind::avx2);
  CHECK(avx2.compiler_runs == 1);
  // avx512 whose probes fail: Inductor ignores the value and takes its best.
  f.env.set("ATEN_CPU_CAPABILITY", "avx512");
  IsaProbeResult ignored = probe_isa(avx512_cpu(), f.env, f.settings("g++"));
  CHECK(ignored.isa.kind == IsaKind::avx2);
  CHECK(any_note_has(ignored, "ATEN_CPU_CAPABILITY=avx512 names no ISA"));
}

TEST_CASE("probe answers are cached per compiler, and a hit compiles nothing",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::missing_header);
  const std::string cache = f.dir / "cache";
  const std::string cxx = f.logging_compiler();
  IsaProbeResult first = probe_isa(avx512_cpu(), f.env, f.settings(cxx, cache));
  CHECK(first.isa.kind == IsaKind::avx2);
  CHECK(first.compiler_runs == 3);
  CHECK(f.logged_runs() == 3);
  IsaProbeResult second = probe_isa(avx512_cpu(), f.env, f.settings(cxx, cache));
  CHECK(second.compiler_runs == 0);
  CHECK(f.logged_runs() == 3);
  CHECK(second.isa.kind == IsaKind::avx2);
  CHECK(second.notes == first.notes);
  // Another compiler (same path, new program) is asked again.
  write_file(cxx, read_file(cxx) + "# upgraded\n", true);
  CHECK(probe_isa(avx512_cpu(), f.env, f.settings(cxx, cache)).compiler_runs == 3);
  CHECK(f.logged_runs() == 6);
}

TEST_CASE("a probe that hangs is stopped at its time-out and counts as failed",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  const std::string cache = f.dir / "cache";
  IsaProbeSettings s = f.settings(f.logging_compiler(true), cache);
  s.timeout = std::chrono::milliseconds(500);
  CpuFeatures avx2_cpu{"x86_64", {"avx2", "fma"}, 0};
  auto start = std::chrono::steady_clock::now();
  IsaProbeResult r = probe_isa(avx2_cpu, f.env, s);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK(r.isa.kind == IsaKind::none);
  CHECK(any_note_has(r, "the avx2 probe timed out"));
  // Not cached: a time-out may be a busy machine.
  CHECK(probe_isa(avx2_cpu, f.env, s).compiler_runs == 1);
  // Nothing of the probe is left behind.
  std::size_t left = 0;
  for (const auto& entry : fs::directory_iterator(f.dir.path()))
    left += entry.path().filename().string().rfind("kbuild-isa-", 0) == 0;
  CHECK(left == 0);
}

TEST_CASE("a probe key given for the command names the answer in the cache", "[unit][isa_probe]") {
  ProbeFixture f(Avx512::missing_header);
  const std::string cache = f.dir / "cache";
  const std::string cxx = f.logging_compiler();
  auto keyed = [&](const std::string& inputs) {
    IsaProbeSettings s = f.settings(cxx, cache);
    s.command_key = [inputs](const Isa& isa) { return isa_probe_key(inputs, isa); };
    return s;
  };
  CHECK(probe_isa(avx512_cpu(), f.env, keyed("inputs A")).compiler_runs == 3);
  CHECK(probe_isa(avx512_cpu(), f.env, keyed("inputs A")).compiler_runs == 0);
  // Other inputs (a changed profile, path, kbuild...): asked again.
  CHECK(probe_isa(avx512_cpu(), f.env, keyed("inputs B")).compiler_runs == 3);
  CHECK(f.logged_runs() == 6);
}

TEST_CASE("each set of probe inputs keeps its answers in a file of its own", "[unit][isa_probe]") {
  // Another kbuild build, profile or torch path asks other questions: in one
  // shared file, every dry run would read them all, and the file would grow
  // with each kbuild that ever ran.
  ProbeFixture f(Avx512::fine);
  const std::string cache = f.dir / "cache";
  f.env.set("KBUILD_CACHE_DIR", cache);
  auto answers_file_count = [&] {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(cache + "/discovery"))
      n += e.path().filename().string().rfind("isa-", 0) == 0;
    return n;
  };
  const std::string cxx = f.logging_compiler();
  auto probe_with = [&](const std::string& python_include, bool shared = true) {
    Paths paths = f.paths;
    paths.python_include = python_include;
    BuildRequest request;
    request.compiler = cxx;
    std::vector<std::string> notes;
    IsaProbeSettings s = isa_probe_settings(request, ResolveContext{paths, f.env, nullptr}, notes);
    // Every check answered as another machine did: nothing is built.
    if (shared)
      for (IsaKind kind : {IsaKind::avx2, IsaKind::avx512, IsaKind::avx512_vnni, IsaKind::amx})
        for (bool bf16 : {false, true})
          for (bool fp16 : {false, true})
            for (IsaProbe probe : {IsaProbe::vectorized, IsaProbe::bf16, IsaProbe::vnni,
                                   IsaProbe::amx, IsaProbe::amx_fp16})
              s.shared_answers[isa_check_name(Isa{kind, bf16, fp16}, probe)] =
                  kind == IsaKind::avx2;
    return probe_isa(avx512_cpu(), f.env, s);
  };
  CHECK(probe_with("/venv-a/include").isa.kind == IsaKind::avx2);
  CHECK(answers_file_count() == 1);
  CHECK(probe_with("/venv-b/include").isa.kind == IsaKind::avx2);
  CHECK(answers_file_count() == 2);
  std::string a_file;
  for (const auto& e : fs::directory_iterator(cache + "/discovery"))
    if (read_file(e.path()).find("/venv-a/include") != std::string::npos) {
      CHECK(a_file.empty());
      a_file = read_file(e.path());
    }
  CHECK(a_file.find("/venv-b/include") == std::string::npos);
  // Asked again without the shared answers: all from venv-a's own file.
  CHECK(probe_with("/venv-a/include", false).compiler_runs == 0);
  CHECK(f.logged_runs() == 0);
}

TEST_CASE("the ISA probe key changes with every input of the probe command", "[unit][isa_probe]") {
  BuildRequest r;
  Paths p;
  p.torch_root = "/site/torch";
  const Isa avx512{IsaKind::avx512};
  const std::string base = isa_probe_key(isa_probe_inputs(r, p), avx512);
  CHECK(isa_probe_key(isa_probe_inputs(r, p), avx512) == base);
  // The command a key names: the same inputs make the same command.
  CHECK(isa_probe_command(r, p, avx512, "s.cpp", "s.so") ==
        isa_probe_command(r, p, avx512, "s.cpp", "s.so"));

  std::vector<std::string> keys{base};
  auto with_request = [&](auto change) {
    BuildRequest changed = r;
    change(changed);
    keys.push_back(isa_probe_key(isa_probe_inputs(changed, p), avx512));
  };
  auto with_paths = [&](auto change) {
    Paths changed = p;
    change(changed);
    keys.push_back(isa_probe_key(isa_probe_inputs(r, changed), avx512));
  };
  with_request([](BuildRequest& c) { c.compiler = "clang++"; });
  with_request([](BuildRequest& c) { c.machine = "aarch64"; });
  with_request([](BuildRequest& c) {
    Profile profile = load_profile(source_root() + "/configs/profiles", "2.11");
    profile.lists.at("base.cflags").front().value = "O2";
    c.profile = std::make_shared<const Profile>(std::move(profile));
  });
  with_request([](BuildRequest& c) {
    c.profile =
        std::make_shared<const Profile>(load_profile(source_root() + "/configs/profiles", "2.14"));
  });
  with_paths([](Paths& c) { c.torch_root = "/other/torch"; });
  with_paths([](Paths& c) { c.torch_npu_root = "/site/torch_npu"; });
  with_paths([](Paths& c) { c.python_include = "/py/include"; });
  with_paths([](Paths& c) { c.python_libdir = "/py/lib"; });
  with_paths([](Paths& c) { c.torch_is_rocm = true; });
  with_paths([](Paths& c) { c.cuda_home = "/opt/cuda"; });
  with_paths([](Paths& c) { c.cuda_home_explicit = true; });
  with_paths([](Paths& c) { c.rocm_home = "/opt/rocm-6"; });
  const std::string inputs = isa_probe_inputs(r, p);
  keys.push_back(isa_probe_key(inputs, Isa{IsaKind::avx2}));
  keys.push_back(isa_probe_key(inputs, Isa{IsaKind::avx512, true}));
  keys.push_back(isa_probe_key(inputs, Isa{IsaKind::amx, false, true}));
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
  CHECK(keys.size() == 16);
  // kbuild itself is part of it.
  CHECK(base.find(program_identity()) == 0);
}

namespace {

std::vector<std::string> check_names(const IsaListResult& r) {
  std::vector<std::string> names;
  for (const IsaCheck& c : r.checks)
    names.push_back(isa_check_name(c.isa, c.probe) + (c.passed ? "" : " failed"));
  return names;
}

std::vector<IsaKind> kinds(const std::vector<Isa>& isas) {
  std::vector<IsaKind> out;
  for (const Isa& isa : isas) out.push_back(isa.kind);
  return out;
}

}  // namespace

TEST_CASE("the ISA list runs every candidate's checks, in Inductor's order and with its flags",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  IsaListResult r = probe_isa_list(avx512_cpu(), f.env, f.settings("g++"));
  // valid_vec_isa_list(): each candidate's __bool__, none skipped.
  CHECK(kinds(r.valid) ==
        std::vector<IsaKind>{IsaKind::avx512_vnni, IsaKind::avx512, IsaKind::avx2});
  CHECK_FALSE(r.valid[0].avx512_bf16);  // VecAVX512VNNI.build_arch_flags() has no bf16
  CHECK(r.valid[1].avx512_bf16);
  CHECK(r.pick.kind == IsaKind::avx512_vnni);
  CHECK_FALSE(r.capability_changed_pick);
  CHECK(check_names(r) == std::vector<std::string>{"avx512_vnni vectorized",
                                                   "avx512_vnni+bf16 avx512_bf16",
                                                   "avx512_vnni avx512_vnni", "avx512 vectorized",
                                                   "avx512+bf16 avx512_bf16", "avx2 vectorized"});
  CHECK(r.certain);
  CHECK(r.compiler_runs == 6);
  CHECK(r.compiler == fs::canonical(*find_executable("g++", f.env)).string());
  // AMX: its VNNI and AMX checks are built with bf16 once that passed, its
  // FP16 check with both (VecAMX.build_arch_flags()).
  CpuFeatures amx_cpu = avx512_cpu();
  amx_cpu.flags.insert({"amx_tile", "amx_bf16", "amx_int8", "amx_fp16"});
  IsaListResult amx = probe_isa_list(amx_cpu, f.env, f.settings("g++"));
  CHECK(kinds(amx.valid) ==
        std::vector<IsaKind>{IsaKind::amx, IsaKind::avx512_vnni, IsaKind::avx512, IsaKind::avx2});
  std::vector<std::string> names = check_names(amx);
  REQUIRE(names.size() == 11);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 4) ==
        std::vector<std::string>{"amx vectorized", "amx+bf16 avx512_bf16", "amx+bf16 avx512_vnni",
                                 "amx+bf16 amx"});
  // g++ 12 has no AMX-FP16 (13 has): the check runs either way.
  CHECK(names[4].rfind("amx+bf16+fp16 amx_fp16", 0) == 0);
}

TEST_CASE("the line's ISA classes decide the candidates and the checks, as its cpu_vec_isa",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  // One cache: a probe command the lines share builds once.
  const std::string cache = f.dir / "cache";
  CpuFeatures amx_cpu = avx512_cpu();
  amx_cpu.flags.insert({"amx_tile", "amx_bf16", "amx_int8"});
  // 2.6: no VNNI class, VecAMX derives from VecAVX512, no BF16 check.
  IsaListResult old = probe_isa_list(amx_cpu, f.env, f.settings("g++", cache, "2.6"));
  CHECK(kinds(old.valid) == std::vector<IsaKind>{IsaKind::amx, IsaKind::avx512, IsaKind::avx2});
  CHECK(check_names(old) == std::vector<std::string>{"amx vectorized", "amx amx",
                                                     "avx512 vectorized", "avx2 vectorized"});
  // 2.9: no VNNI class either, but the BF16 check.
  IsaListResult nine = probe_isa_list(amx_cpu, f.env, f.settings("g++", cache, "2.9"));
  CHECK(kinds(nine.valid) == std::vector<IsaKind>{IsaKind::amx, IsaKind::avx512, IsaKind::avx2});
  CHECK(check_names(nine)[2] == "amx+bf16 amx");
  // --isa auto on a VNNI host without AMX: 2.6 and 2.9 pick AVX512 (their
  // VNNI host has no VNNI class), 2.11 VNNI.
  for (const char* line : {"2.6", "2.9"}) {
    INFO(line);
    CHECK(probe_isa(avx512_cpu(), f.env, f.settings("g++", cache, line)).isa.kind ==
          IsaKind::avx512);
  }
  CHECK(probe_isa(avx512_cpu(), f.env, f.settings("g++", cache, "2.14")).isa.kind ==
        IsaKind::avx512_vnni);
}

TEST_CASE("shared answers are taken before a probe is built, a shared failure too",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  const std::string cxx = f.logging_compiler();
  IsaListResult first = probe_isa_list(avx512_cpu(), f.env, f.settings(cxx));
  const std::size_t runs = f.logged_runs();
  IsaProbeSettings shared = f.settings(cxx, f.dir / "cache");
  for (const IsaCheck& c : first.checks)
    shared.shared_answers[isa_check_name(c.isa, c.probe)] = true;
  shared.shared_answers["avx512_vnni avx512_vnni"] = false;
  IsaListResult second = probe_isa_list(avx512_cpu(), f.env, shared);
  CHECK(second.compiler_runs == 0);
  CHECK(f.logged_runs() == runs);
  CHECK(second.shared_answers_used == static_cast<int>(second.checks.size()));
  CHECK(kinds(second.valid) == std::vector<IsaKind>{IsaKind::avx512, IsaKind::avx2});
  // Kept in the local cache: the next run needs neither.
  shared.shared_answers.clear();
  IsaListResult third = probe_isa_list(avx512_cpu(), f.env, shared);
  CHECK(third.compiler_runs == 0);
  CHECK(third.shared_answers_used == 0);
  CHECK(kinds(third.valid) == kinds(second.valid));
}

TEST_CASE("ATEN_CPU_CAPABILITY picks among the valid list, which it does not change",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  // One cache: the probes build once, and the variable is not one of their
  // inputs.
  const std::string cache = f.dir / "cache";
  f.env.set("ATEN_CPU_CAPABILITY", "avx2");
  IsaListResult r = probe_isa_list(avx512_cpu(), f.env, f.settings("g++", cache));
  CHECK(r.valid.size() == 3);
  CHECK(r.pick.kind == IsaKind::avx2);
  CHECK(r.capability_changed_pick);
  f.env.set("ATEN_CPU_CAPABILITY", "default");
  IsaListResult none = probe_isa_list(avx512_cpu(), f.env, f.settings("g++", cache));
  CHECK(none.valid.size() == 3);
  CHECK(none.pick.kind == IsaKind::none);
  CHECK(none.capability_changed_pick);
  f.env.set("ATEN_CPU_CAPABILITY", "avx512");
  CHECK_FALSE(
      probe_isa_list(avx512_cpu(), f.env, f.settings("g++", cache)).capability_changed_pick);
}

TEST_CASE("the ISA list needs its compiler: one that is not found is an error",
          "[unit][isa_probe]") {
  ProbeFixture f(Avx512::fine);
  try {
    (void)probe_isa_list(avx512_cpu(), f.env, f.settings("no-such-g++"));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compiler_missing);
    CHECK(std::string(e.what()).find("compiler 'no-such-g++' not found on PATH") !=
          std::string::npos);
  }
}
