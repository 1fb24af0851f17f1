#include <catch2/catch.hpp>

#include "devices/template_string.hpp"

using namespace kbuild;

namespace {
struct Fixture {
  Environment env{{{"ASCEND_HOME_PATH", "/opt/ascend"}, {"EMPTY", ""}}};
  Paths paths;
  TemplateContext ctx{env, paths, "/etc/kbuild/devices.d"};
  Fixture() { paths.torch_root = "/site/torch"; }
  Expansion expand(const std::string& t) { return TemplateString::parse(t).expand(ctx); }
};
}  // namespace

TEST_CASE("templates expand env variables, roots and $$", "[unit][template]") {
  Fixture f;
  CHECK(f.expand("${env:ASCEND_HOME_PATH}/lib64").value == "/opt/ascend/lib64");
  CHECK(f.expand("${torch_root}/include").value == "/site/torch/include");
  CHECK(f.expand("${config_dir}/x").value == "/etc/kbuild/devices.d/x");
  CHECK(f.expand("cost: $$5").value == "cost: $5");
  CHECK(f.expand("plain").value == "plain");
}

TEST_CASE("a required variable that is unset (or empty) is reported by name", "[unit][template]") {
  Fixture f;
  Expansion x = f.expand("${env:NOT_SET_ANYWHERE}/include");
  CHECK_FALSE(x.value.has_value());
  CHECK(x.missing_env == "NOT_SET_ANYWHERE");
  CHECK(f.expand("${env:EMPTY}").missing_env == "EMPTY");
}

TEST_CASE("defaults apply when unset or empty and may hold variables", "[unit][template]") {
  Fixture f;
  f.paths.torch_npu_root = "/site/torch_npu";
  CHECK(f.expand("${env:LIBTORCH_NPU_PATH:-${torch_npu_root}/lib}").value == "/site/torch_npu/lib");
  CHECK(f.expand("${env:EMPTY:-fallback}").value == "fallback");
  CHECK(f.expand("${env:ASCEND_HOME_PATH:-unused}").value == "/opt/ascend");
  CHECK(f.expand("${env:X:-}").value == "");
  f.env.set("LIBTORCH_NPU_PATH", "/custom/lib");
  CHECK(f.expand("${env:LIBTORCH_NPU_PATH:-${torch_npu_root}/lib}").value == "/custom/lib");
}

TEST_CASE("an unknown root leaves the value out and names the root", "[unit][template]") {
  Fixture f;
  Expansion x = f.expand("${torch_npu_root}/include");
  CHECK_FALSE(x.value.has_value());
  CHECK(x.missing_root == "torch_npu_root");
  CHECK(x.missing_env.empty());
}

TEST_CASE("syntax errors are found at parse time with their offset", "[unit][template]") {
  auto offset_of = [](const std::string& t) -> std::size_t {
    try {
      TemplateString::parse(t);
    } catch (const TemplateSyntaxError& e) {
      return e.offset;
    }
    FAIL("no syntax error for " << t);
    return 0;
  };
  CHECK(offset_of("a${nope}") == 1);
  CHECK(offset_of("${torch_root") == 0);
  CHECK(offset_of("x $y") == 2);
  CHECK(offset_of("${env:}") == 6);
  CHECK(offset_of("${env:A:-${bad}}") == 9);
  CHECK(offset_of("${env:A:-x") == 0);
  CHECK_THROWS_WITH(TemplateString::parse("${torch}"), Catch::Contains("unknown variable"));
}

TEST_CASE("a literal '; rm -rf ~' or '$(...)' stays text, never evaluated", "[unit][template]") {
  Fixture f;
  CHECK(f.expand("; rm -rf ~").value == "; rm -rf ~");
  CHECK(f.expand("$$(echo hi)").value == "$(echo hi)");
}

TEST_CASE("defaults nested too deep are a syntax error, not a stack overflow", "[unit][template]") {
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "${env:A:-";
  deep += std::string(10000, '}');
  CHECK_THROWS_AS(TemplateString::parse(deep), TemplateSyntaxError);
  std::string ok;  // 16 levels still parse
  for (int i = 0; i < 16; ++i) ok += "${env:A:-";
  ok += "x" + std::string(16, '}');
  CHECK(TemplateString::parse(ok).expand({Environment{}, Paths{}, ""}).value == "x");
}
