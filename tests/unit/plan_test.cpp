#include <algorithm>

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/profile.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "plan/compiler_call.hpp"
#include "plan/plan.hpp"
#include "site/isa.hpp"
#include "util/text.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;
using kbuild_test::has;
using namespace kbuild_test;
using kbuild_test::read_file;
using kbuild_test::TempDir;
using kbuild_test::write_file;

namespace {
bool has(const BuildOptions& o, const std::string& flag) {
  auto v = o.values(OptionList::cflags);
  return std::find(v.begin(), v.end(), flag) != v.end();
}
}  // namespace

TEST_CASE("compiler family comes from the path, clang++ is not g++", "[unit][base]") {
  CHECK(compiler_kind("/usr/bin/g++-12") == CompilerKind::gcc);
  CHECK(compiler_kind("x86_64-linux-gnu-gcc") == CompilerKind::gcc);
  CHECK(compiler_kind("clang++") == CompilerKind::clang);
  CHECK(compiler_kind("/opt/llvm/bin/clang++-17") == CompilerKind::clang);
  CHECK(compiler_kind("c++") == CompilerKind::other);
}

TEST_CASE(
    "g++ gets -pedantic, -fexcess-precision=fast and -fno-tree-loop-vectorize; clang its own "
    "warning",
    "[unit][base]") {
  BaseSettings s;
  s.compiler = "g++";
  BuildOptions gcc = base_layer(s);
  CHECK(has(gcc, "pedantic"));
  CHECK(has(gcc, "fexcess-precision=fast"));
  CHECK(has(gcc, "fno-tree-loop-vectorize"));
  CHECK_FALSE(has(gcc, "Wno-ignored-optimization-argument"));
  s.compiler = "clang++";
  BuildOptions clang = base_layer(s);
  CHECK_FALSE(has(clang, "pedantic"));
  CHECK_FALSE(has(clang, "fexcess-precision=fast"));
  // Inductor's default (aot_inductor.raise_error_on_ignored_optimization).
  CHECK(has(clang, "Werror=ignored-optimization-argument"));
  CHECK_FALSE(has(clang, "Wno-ignored-optimization-argument"));
}

TEST_CASE("clang: AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION=0 turns the error into -Wno-",
          "[unit][base]") {
  Environment env;
  BaseSettings s;
  s.compiler = "clang++";
  s.env = &env;
  env.set("AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION", "0");
  CHECK(has(base_layer(s), "Wno-ignored-optimization-argument"));
  CHECK_FALSE(has(base_layer(s), "Werror=ignored-optimization-argument"));
  env.set("AOTINDUCTOR_RAISE_ERROR_ON_IGNORED_OPTIMIZATION", "1");
  CHECK(has(base_layer(s), "Werror=ignored-optimization-argument"));
}

TEST_CASE("optimization modes: -O3 -DNDEBUG, minimum -O1, debug -O0 -g", "[unit][base]") {
  BaseSettings s;
  Strings v = base_layer(s).values(OptionList::cflags);
  CHECK(Strings(v.begin(), v.begin() + 2) == Strings{"O3", "DNDEBUG"});
  s.min_optimize = true;
  v = base_layer(s).values(OptionList::cflags);
  CHECK(Strings(v.begin(), v.begin() + 2) == Strings{"O1", "DNDEBUG"});
  s.debug = true;
  v = base_layer(s).values(OptionList::cflags);
  CHECK(Strings(v.begin(), v.begin() + 2) == Strings{"O0", "g"});
  CHECK_FALSE(has(base_layer(s), "DNDEBUG"));
}

TEST_CASE("-shared only when linking, -fPIC always; -mcpu=native on ppc64le", "[unit][base]") {
  BaseSettings s;
  CHECK(has(base_layer(s), "shared"));
  s.do_link = false;
  CHECK_FALSE(has(base_layer(s), "shared"));
  CHECK(has(base_layer(s), "fPIC"));
  CHECK(has(base_layer(s), "march=native"));
  s.machine = "ppc64le";
  CHECK(has(base_layer(s), "mcpu=native"));
  CHECK_FALSE(has(base_layer(s), "march=native"));
}

TEST_CASE("riscv: -march=rv64gc / rv32gc instead of -march=native (Inductor and torch_npu)",
          "[unit][base]") {
  BaseSettings s;
  s.machine = "riscv64";
  CHECK(has(base_layer(s), "march=rv64gc"));
  s.machine = "riscv32";
  CHECK(has(base_layer(s), "march=rv32gc"));
  CHECK_FALSE(has(base_layer(s), "march=native"));
}

TEST_CASE("extra flags become one passthrough entry, empty when none", "[unit][base]") {
  BaseSettings s;
  CHECK(base_layer(s).values(OptionList::passthrough_args) == Strings{""});
  s.extra_flags = {"-g3", "-DX=1"};
  CHECK(base_layer(s).values(OptionList::passthrough_args) == Strings{"-g3 -DX=1"});
}

TEST_CASE("warning_all off drops -Wall only (Inductor's ISA probe builds)", "[unit][base]") {
  BaseSettings s;
  CHECK(has(base_layer(s), "Wall"));
  s.warning_all = false;
  CHECK_FALSE(has(base_layer(s), "Wall"));
  CHECK(has(base_layer(s), "Wno-unused-variable"));
}

// plan_build: the layers in order (base, torch, device, user), finalized
// and assembled; requests that cannot be one build are usage errors.
namespace {

struct Planner {
  Registry registry;
  Paths paths;
  Environment env;
  BuildRequest request;
  Planner() {
    request.query.device_type = "cpu";
    request.sources = {"src/k.cpp"};
    request.use_torch = false;
  }
  BuildPlan plan() { return plan_build(request, registry, ResolveContext{paths, env}); }
  std::string usage_error() {
    try {
      (void)plan();
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
      return e.what();
    }
    FAIL("planned");
    return "";
  }
};

}  // namespace

TEST_CASE("the output defaults from the first source; the command writes it",
          "[unit][build_plan]") {
  Planner p;
  BuildPlan plan = p.plan();
  CHECK(plan.output == "src/k.so");
  CHECK(plan.command.argv[plan.command.output_index] == "src/k.so");
  CHECK(plan.command.argv[0] == "g++");
  p.request.output = "out/x.so";
  p.request.compiler = "/opt/g++";
  plan = p.plan();
  CHECK(plan.output == "out/x.so");
  CHECK(plan.command.argv[0] == "/opt/g++");
}

TEST_CASE("the user layer comes last, from the command line", "[unit][build_plan]") {
  Planner p;
  p.request.definitions = {"MINE=1"};
  p.request.include_dirs = {"/my/inc"};
  p.request.libraries = {"mylib"};
  BuildPlan plan = p.plan();
  CHECK(plan.options.values(OptionList::definitions).back() == "MINE=1");
  CHECK(plan.options.values(OptionList::include_dirs).back() == "/my/inc");
  const Entry& lib = plan.options.entries(OptionList::libraries).back();
  CHECK(lib.value == "mylib");
  CHECK(lib.origin.layer == Layer::user);
  CHECK(lib.origin.provider == "command line");
}

TEST_CASE("without the torch layer nothing of torch applies, even with its root known",
          "[unit][build_plan]") {
  Planner p;
  p.paths.torch_root = "/site/torch";
  const BuildPlan plain = p.plan();
  for (const Entry& e : plain.options.entries(OptionList::libraries))
    CHECK(e.origin.layer != Layer::torch);
  p.request.use_torch = true;
  p.request.isa = Isa{};
  Strings libs = p.plan().options.values(OptionList::libraries);
  CHECK(std::find(libs.begin(), libs.end(), "torch") != libs.end());
}

TEST_CASE("requests that are not one build are usage errors", "[unit][build_plan]") {
  Planner p;
  p.request.sources.clear();
  CHECK_THAT(p.usage_error(), Catch::StartsWith("no source given"));
  p.request.sources = {"a.cpp", "b.cpp"};
  p.request.kind = OutputKind::object;
  CHECK_THAT(p.usage_error(), Catch::StartsWith("--compile-only takes exactly one source"));
  p.request.kind = OutputKind::precompiled_header;
  CHECK(p.usage_error() == "--precompile takes exactly one header");
  p.request.kind = OutputKind::preprocessed;
  CHECK(p.usage_error() == "--preprocess takes exactly one source");
  p.request.kind = OutputKind::shared_library;
  CHECK(p.plan().command.argv.size() > 3);  // many sources make one library
}

// plan_steps: the steps a cache miss runs, decided before anything runs:
// one step for a plain build; per-source compiles through a compile-only
// launcher and a local link; a load check as a step of its own.
namespace {

BuildPlan plan_for(const Strings& sources, OutputKind kind = OutputKind::shared_library) {
  BuildRequest r;
  r.query.device_type = "cpu";
  r.sources = sources;
  r.kind = kind;
  r.output = kind == OutputKind::shared_library ? "out/k.so" : "out/k.o";
  r.use_torch = false;
  Registry registry;
  Paths paths;
  Environment env;
  return plan_build(r, registry, ResolveContext{paths, env});
}

StepInput input(const Strings& sources, const std::string& launcher = "") {
  StepInput in;
  in.sources = sources;
  in.launcher = parse_launcher(launcher);
  return in;
}

}  // namespace

TEST_CASE("a plain build is one step: Inductor's command as it is", "[unit][build_steps]") {
  const BuildPlan plan = plan_for({"k.cpp"});
  std::vector<Step> steps = plan_steps(plan, input({"k.cpp"}));
  REQUIRE(steps.size() == 1);
  const Step& s = steps[0];
  CHECK(s.kind == StepKind::command);
  CHECK(s.argv == plan.command.argv);
  CHECK(s.compiler_index == 0);
  CHECK(s.argv[s.output_index] == "out/k.so");
  CHECK(s.work_files == std::vector<std::size_t>{s.output_index});
  CHECK(s.links);
  CHECK_FALSE(s.observed);
  CHECK(step_lines(steps) == Strings{shell_join(plan.command.argv)});

  StepInput record = input({"k.cpp"});
  record.observe = true;
  CHECK(plan_steps(plan, record)[0].observed);
  CHECK(plan_steps(plan, record)[0].argv == plan.command.argv);  // argv stays Inductor's
}

TEST_CASE("a launcher that is not compile-only goes before the one command",
          "[unit][build_steps]") {
  const BuildPlan plan = plan_for({"k.cpp"});
  StepInput in = input({"k.cpp"}, "nice -n 5");
  in.observe = true;
  std::vector<Step> steps = plan_steps(plan, in);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].compiler_index == 3);
  CHECK(Strings(steps[0].argv.begin(), steps[0].argv.begin() + 3) == Strings{"nice", "-n", "5"});
  CHECK(Strings(steps[0].argv.begin() + 3, steps[0].argv.end()) == plan.command.argv);
  CHECK(steps[0].argv[steps[0].output_index] == "out/k.so");
  CHECK(steps[0].observed);
}

TEST_CASE("ccache: each source compiled to an object through it, then a local link",
          "[unit][build_steps]") {
  const BuildPlan plan = plan_for({"src/a.cpp", "b.cpp"});
  StepInput in = input({"src/a.cpp", "b.cpp"}, "ccache");
  in.observe = true;
  std::vector<Step> steps = plan_steps(plan, in);
  REQUIRE(steps.size() == 3);
  for (std::size_t i = 0; i < 2; ++i) {
    const Step& c = steps[i];
    const std::string base = i == 0 ? "out/k.so.0-a" : "out/k.so.1-b";
    CHECK(c.argv[0] == "ccache");
    CHECK(c.compiler_index == 1);
    CHECK(c.argv[1] == plan.command.argv[0]);
    CHECK(has(c.argv, "-c"));
    CHECK_FALSE(has(c.argv, "-shared"));
    CHECK(c.source == (i == 0 ? "src/a.cpp" : "b.cpp"));
    CHECK(has(c.argv, c.source));
    CHECK(c.argv[c.output_index] == base + ".o");
    CHECK(c.argv[c.output_index - 1] == "-o");
    CHECK_FALSE(c.links);
    // Observed: no dependency list on the command line.
    CHECK(c.observed);
    CHECK_FALSE(has(c.argv, "-MF"));
    CHECK(c.work_files == std::vector<std::size_t>{c.output_index});
  }
  const Step& link = steps[2];
  CHECK(link.argv[0] == plan.command.argv[0]);  // no launcher: linked here
  CHECK(link.links);
  CHECK(link.source.empty());
  CHECK(has(link.argv, "-shared"));
  CHECK(link.argv[link.output_index] == "out/k.so");
  REQUIRE(link.work_files.size() == 3);
  CHECK(link.argv[link.work_files[0]] == "out/k.so.0-a.o");
  CHECK(link.argv[link.work_files[1]] == "out/k.so.1-b.o");
  CHECK(link.work_files[2] == link.output_index);
  CHECK(link.observed);  // the linker's reads (libraries, scripts) are inputs too
}

TEST_CASE("a compile-only launcher does not split an object build or a link of objects",
          "[unit][build_steps]") {
  const BuildPlan object = plan_for({"k.cpp"}, OutputKind::object);
  std::vector<Step> one = plan_steps(object, input({"k.cpp"}, "ccache"));
  REQUIRE(one.size() == 1);
  CHECK(one[0].argv[0] == "ccache");
  CHECK_FALSE(one[0].links);

  const BuildPlan objects = plan_for({"a.o", "b.a"});
  StepInput in = input({"a.o", "b.a"}, "ccache");
  in.observe = true;
  std::vector<Step> link = plan_steps(objects, in);
  REQUIRE(link.size() == 1);
  CHECK(link[0].observed);
  CHECK(link[0].links);
}

TEST_CASE("--resolve-native: the launched compiles get this machine's flags, the link not",
          "[unit][build_steps]") {
  const BuildPlan plan = plan_for({"k.cpp"});
  REQUIRE(has(plan.command.argv, "-march=native"));
  StepInput in = input({"k.cpp"}, "distcc");
  in.launcher.resolve_native = true;
  CHECK_THROWS_AS(plan_steps(plan, in), Error);
  try {
    (void)plan_steps(plan, in);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::compiler_missing);
    CHECK(std::string(e.what()).find("drop --resolve-native") != std::string::npos);
  }
  in.native_flags = {"-march=skylake", "-mavx2", "--param=l1-cache-size=32"};
  std::vector<Step> steps = plan_steps(plan, in);
  REQUIRE(steps.size() == 2);
  CHECK_FALSE(has(steps[0].argv, "-march=native"));
  CHECK(has(steps[0].argv, "-march=skylake"));
  CHECK(has(steps[0].argv, "--param=l1-cache-size=32"));
  CHECK(steps[0].argv[steps[0].output_index] == "out/k.so.0-k.o");
  CHECK(has(steps[1].argv, "-march=native"));  // the local link keeps its words

  // An object build through the launcher is one step: resolved too.
  const BuildPlan object = plan_for({"k.cpp"}, OutputKind::object);
  StepInput one = input({"k.cpp"}, "distcc");
  one.launcher.resolve_native = true;
  one.native_flags = in.native_flags;
  std::vector<Step> object_steps = plan_steps(object, one);
  REQUIRE(object_steps.size() == 1);
  CHECK_FALSE(has(object_steps[0].argv, "-march=native"));
  CHECK(has(object_steps[0].argv, "-march=skylake"));

  // Without a launcher there is nothing to resolve: -march=native stays.
  StepInput plain = input({"k.cpp"});
  plain.launcher.resolve_native = true;
  CHECK(plan_steps(plan, plain)[0].argv == plan.command.argv);
}

TEST_CASE("the load check is a step of its own, printed as a comment", "[unit][build_steps]") {
  const BuildPlan plan = plan_for({"k.cpp"});
  StepInput in = input({"k.cpp"});
  in.load_check = true;
  in.required_symbols = {"kernel", "init"};
  std::vector<Step> steps = plan_steps(plan, in);
  REQUIRE(steps.size() == 2);
  CHECK(steps[1].kind == StepKind::load_check);
  CHECK(steps[1].argv.empty());
  Strings lines = step_lines(steps);
  CHECK(lines[1] ==
        "# load check: dlopen out/k.so (RTLD_NOW) in kbuild-load-check, needs symbol kernel, "
        "needs symbol init");
}

TEST_CASE("step_lines quote each word so a shell splits them back", "[unit][build_steps]") {
  Step s;
  s.argv = {"g++", "a b.cpp", "-DX=\"y\"", "-o", "k.so"};
  Strings lines = step_lines({s});
  REQUIRE(lines.size() == 1);
  CHECK(shell_split(lines[0]) == std::optional<Strings>(s.argv));
}

TEST_CASE("links_objects_only: objects and archives only", "[unit][build_steps]") {
  CHECK(links_objects_only({"a.o", "b.a", "c.so"}));
  CHECK_FALSE(links_objects_only({"a.o", "k.cpp"}));
  CHECK_FALSE(links_objects_only({"k.so.cpp"}));
  CHECK_FALSE(links_objects_only({"obj"}));
}

// The ISA classes and checks of each Inductor line, from its profile, and
// the probe settings `--isa auto` and `kbuild isa` share.
namespace {

IsaLine line_of(const std::string& line) {
  return isa_line(load_profile(source_root() + "/configs/profiles", line));
}

}  // namespace

TEST_CASE("each line's ISA classes and checks are its cpu_vec_isa's", "[unit][isa_settings]") {
  const std::set<IsaKind> without_vnni = {IsaKind::avx2, IsaKind::avx512, IsaKind::amx,
                                          IsaKind::neon, IsaKind::sve256};
  for (const char* old : {"2.6", "2.7"}) {
    INFO(old);
    IsaLine line = line_of(old);
    CHECK(line.kinds == without_vnni);
    CHECK_FALSE(line.bf16_check);
    CHECK_FALSE(line.fp16_check);
    CHECK_FALSE(line.amx_extends_vnni);
  }
  IsaLine nine = line_of("2.9");
  CHECK(nine.kinds == without_vnni);
  CHECK(nine.bf16_check);
  CHECK(nine.fp16_check);
  CHECK_FALSE(nine.amx_extends_vnni);
  for (const char* current : {"2.11", "2.14"}) {
    INFO(current);
    IsaLine line = line_of(current);
    CHECK(line.kinds.count(IsaKind::avx512_vnni));
    CHECK(line.kinds.size() == 6);
    CHECK(line.bf16_check);
    CHECK(line.fp16_check);
    CHECK(line.amx_extends_vnni);
  }
}

TEST_CASE("the probe settings: the request's compiler, torch and profile, and a loader",
          "[unit][isa_settings]") {
  Paths paths;
  paths.torch_root = "/site/torch";
  Environment env = Environment::from_process();
  BuildRequest request;
  request.compiler = "clang++";
  request.profile =
      std::make_shared<const Profile>(load_profile(source_root() + "/configs/profiles", "2.6"));
  std::vector<std::string> notes;
  IsaProbeSettings s = isa_probe_settings(request, ResolveContext{paths, env, nullptr}, notes);
  CHECK(s.compiler == "clang++");
  CHECK(s.torch_root == "/site/torch");
  CHECK_FALSE(s.line.kinds.count(IsaKind::avx512_vnni));  // the request's profile: 2.6
  const std::vector<std::string> argv = s.command(Isa{IsaKind::avx2}, "p.cpp", "p.so");
  CHECK(argv.front() == "clang++");
  CHECK(std::any_of(argv.begin(), argv.end(),
                    [](const std::string& word) { return word.find("-mavx2") != word.npos; }));
  CHECK(s.command_key(Isa{IsaKind::avx2}) != s.command_key(Isa{IsaKind::avx512}));
}

// Launchers: parsed like a shell would, known compile-only ones recognised;
// what -march=native means read from the compiler's -### output (here a
// fake compiler script: no g++ runs).
TEST_CASE("parse_launcher: words split like a shell, the program's file name", "[unit][launcher]") {
  Launcher none = parse_launcher("");
  CHECK(none.argv.empty());
  CHECK(none.name() == "");
  CHECK_FALSE(none.split);
  Launcher wrapped = parse_launcher("/opt/my tools/wrap 'a b' --x=\"1 2\"");
  CHECK(wrapped.argv == Strings{"/opt/my", "tools/wrap", "a b", "--x=1 2"});
  CHECK(parse_launcher("'/opt/my tools/wrap' -v").name() == "wrap");
  CHECK_FALSE(wrapped.split);
  CHECK_FALSE(wrapped.distributes);
  CHECK_FALSE(wrapped.resolve_native);
}

TEST_CASE("ccache and sccache compile only; distcc, icecc and pump also distribute",
          "[unit][launcher]") {
  for (const char* text : {"ccache", "/usr/bin/ccache", "sccache --flag"}) {
    Launcher l = parse_launcher(text);
    CHECK(l.split);
    CHECK_FALSE(l.distributes);
  }
  for (const char* text : {"distcc", "/usr/lib/icecc/bin/icecc", "pump distcc"}) {
    Launcher l = parse_launcher(text);
    CHECK(l.split);
    CHECK(l.distributes);
  }
  // Only the program counts, not an argument or a look-alike name.
  CHECK_FALSE(parse_launcher("env ccache").split);
  CHECK_FALSE(parse_launcher("ccache-wrapper").split);
}

TEST_CASE("an unbalanced quote is a usage error naming the text", "[unit][launcher]") {
  try {
    (void)parse_launcher("ccache 'oops");
    FAIL("accepted an unbalanced quote");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()) == "--launcher 'ccache 'oops' has an unbalanced quote");
  }
}

TEST_CASE("resolve_native_flags: -march and the -m and --param words after it on cc1's line",
          "[unit][launcher]") {
  TempDir tmp;
  write_file(
      tmp / "g++",
      "#!/bin/sh\n"
      "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/args\"\n"
      "echo 'Using built-in specs.' >&2\n"
      "echo ' \"/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus\" \"-E\" \"-quiet\" \"-mmmx-before\" "
      "\"-\" \"-march=skylake\" \"-mmmx\" \"-mno-3dnow\" \"--param=l1-cache-size=32\" "
      "\"-mtune=skylake\" \"-dumpbase\" \"null\"' >&2\n"
      "echo ' \"/usr/bin/as\" \"-march=other\"' >&2\n",
      true);
  Environment env;
  Strings flags = resolve_native_flags(tmp / "g++", env);
  CHECK(flags == Strings{"-march=skylake", "-mmmx", "-mno-3dnow", "--param=l1-cache-size=32",
                         "-mtune=skylake"});
  CHECK(read_file(tmp / "args") == "-###\n-march=native\n-E\n-x\nc++\n/dev/null\n");
}

TEST_CASE("resolve_native_flags: nothing when the compiler says nothing usable",
          "[unit][launcher]") {
  TempDir tmp;
  write_file(tmp / "silent", "#!/bin/sh\nexit 1\n", true);
  CHECK(resolve_native_flags(tmp / "silent", Environment()).empty());
  write_file(tmp / "broken", "#!/bin/sh\necho ' cc1plus \"-march=x' >&2\n", true);
  CHECK(resolve_native_flags(tmp / "broken", Environment()).empty());
}

// The torch layer on its own: torch's macros, paths and libraries, aot
// without torch_python, notes for the Python dirs it could not name.
namespace {

Paths torch_at(const std::string& root) {
  Paths p;
  p.torch_root = root;
  return p;
}

}  // namespace

TEST_CASE("torch's macros, include and library dirs under its root", "[unit][torch_layer]") {
  Paths paths = torch_at("/site/torch");
  paths.python_include = "/py/include";
  paths.python_libdir = "/py/lib";
  OptionsResult r = torch_layer(TorchSettings{}, paths);
  const BuildOptions& o = r.options;
  CHECK(o.values(OptionList::definitions) == Strings{"TORCH_INDUCTOR_CPP_WRAPPER",
                                                     "STANDALONE_TORCH_HEADER",
                                                     " C10_USING_CUSTOM_GENERATED_MACROS"});
  CHECK(
      o.values(OptionList::include_dirs) ==
      Strings{"/py/include", "/site/torch/include", "/site/torch/include/torch/csrc/api/include"});
  CHECK(o.values(OptionList::libraries_dirs) == Strings{"/py/lib", "/site/torch/lib"});
  CHECK(o.values(OptionList::libraries) == Strings{"torch", "torch_cpu", "torch_python", "gomp"});
  CHECK(o.values(OptionList::cflags) == Strings{"fopenmp"});
  CHECK(r.notes.empty());
  for (const Entry& e : o.entries(OptionList::libraries)) {
    CHECK(e.origin.layer == Layer::torch);
    CHECK(e.origin.provider == "torch");
  }
}

TEST_CASE("aot_mode drops torch_python; unknown Python dirs are left out with notes",
          "[unit][torch_layer]") {
  TorchSettings aot;
  aot.aot_mode = true;
  OptionsResult r = torch_layer(aot, torch_at("/t"));
  CHECK(r.options.values(OptionList::libraries) == Strings{"torch", "torch_cpu", "gomp"});
  CHECK(r.options.values(OptionList::include_dirs) ==
        Strings{"/t/include", "/t/include/torch/csrc/api/include"});
  CHECK(r.options.values(OptionList::libraries_dirs) == Strings{"/t/lib"});
  REQUIRE(r.notes.size() == 2);
  CHECK_THAT(r.notes[0], Catch::Contains("--python-include"));
  CHECK_THAT(r.notes[1], Catch::Contains("--python-libdir"));
}

TEST_CASE("an ISA adds its macros and flags", "[unit][torch_layer]") {
  TorchSettings none;
  CHECK(torch_layer(none, torch_at("/t")).options.values(OptionList::passthrough_args).empty());
  TorchSettings avx2;
  avx2.isa.kind = IsaKind::avx2;
  OptionsResult r = torch_layer(avx2, torch_at("/t"));
  Strings macros = r.options.values(OptionList::definitions);
  REQUIRE(macros.size() == 3 + isa_macros(avx2.isa).size());
  CHECK(Strings(macros.begin() + 3, macros.end()) == isa_macros(avx2.isa));
  CHECK_FALSE(isa_macros(avx2.isa).empty());
  CHECK(r.options.values(OptionList::passthrough_args) == Strings{*isa_flags(avx2.isa)});
}
