// plan_build: the layers in order (base, torch, device, user), finalized
// and assembled; requests that cannot be one build are usage errors.
#include "plan/plan.hpp"

#include <catch2/catch.hpp>

#include "devices/registry.hpp"
#include "kbuild/error.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

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
