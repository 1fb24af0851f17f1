// plan_steps: the steps a cache miss runs, decided before anything runs:
// one step for a plain build; per-source compiles through a compile-only
// launcher and a local link; a load check as a step of its own.
#include "plan/plan.hpp"

#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/registry.hpp"
#include "kbuild/error.hpp"
#include "util/text.hpp"

using namespace kbuild;
using kbuild_test::has;
using Strings = std::vector<std::string>;

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
