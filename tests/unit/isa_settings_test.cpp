// The ISA classes and checks of each Inductor line, from its profile, and
// the probe settings `--isa auto` and `kbuild isa` share.
#include <algorithm>
#include <catch2/catch.hpp>

#include "../support/test_support.hpp"
#include "devices/profile.hpp"
#include "plan/plan.hpp"

using namespace kbuild;
using namespace kbuild_test;

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
