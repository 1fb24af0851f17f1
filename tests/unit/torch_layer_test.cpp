// The torch layer on its own: torch's macros, paths and libraries, aot
// without torch_python, notes for the Python dirs it could not name.
#include "plan/plan.hpp"

#include <catch2/catch.hpp>

#include "site/isa.hpp"

using namespace kbuild;
using Strings = std::vector<std::string>;

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
