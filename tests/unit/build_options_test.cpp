#include <catch2/catch.hpp>

#include "kbuild/build_options.hpp"

using namespace kbuild;

namespace {
Origin from(Layer layer, const std::string& provider) {
  return Origin{layer, provider, "", 0};
}
}  // namespace

TEST_CASE("list names round-trip and follow Inductor's tuple order", "[unit][options]") {
  std::vector<std::string> names;
  for (OptionList l : kAllOptionLists) {
    names.emplace_back(list_name(l));
    CHECK(list_from_name(list_name(l)) == l);
  }
  CHECK(names == std::vector<std::string>{"definitions", "include_dirs", "cflags", "ldflags",
                                          "libraries_dirs", "libraries", "passthrough_args"});
  CHECK_FALSE(list_from_name("library_dirs").has_value());
}

TEST_CASE("append keeps layer order: base entries before torch entries", "[unit][options]") {
  BuildOptions base, torch;
  base.add(OptionList::cflags, "O3", from(Layer::base, "base"));
  torch.add(OptionList::cflags, "fopenmp", from(Layer::torch, "torch"));
  base.append(torch);
  CHECK(base.values(OptionList::cflags) == std::vector<std::string>{"O3", "fopenmp"});
  CHECK(base.entries(OptionList::cflags)[1].origin.layer == Layer::torch);
}

TEST_CASE("finalize de-duplicates keeping the first and records what it dropped",
          "[unit][options]") {
  BuildOptions o;
  o.add(OptionList::libraries_dirs, "/t/lib", from(Layer::torch, "torch"));
  o.add(OptionList::libraries_dirs, "/cuda/lib", from(Layer::device, "built-in cuda"));
  o.add(OptionList::libraries_dirs, "/t/lib", from(Layer::device, "default device options"));
  o.finalize(false);
  CHECK(o.values(OptionList::libraries_dirs) == std::vector<std::string>{"/t/lib", "/cuda/lib"});
  CHECK(o.entries(OptionList::libraries_dirs)[0].origin.provider == "torch");
  REQUIRE(o.dropped().size() == 1);
  CHECK(o.dropped()[0].entry.origin.provider == "default device options");
  CHECK(o.dropped()[0].reason.find("torch") != std::string::npos);
}

TEST_CASE("finalize for compile-only empties libraries and library dirs only", "[unit][options]") {
  BuildOptions o;
  o.add(OptionList::libraries, "torch", from(Layer::torch, "torch"));
  o.add(OptionList::libraries_dirs, "/t/lib", from(Layer::torch, "torch"));
  o.add(OptionList::ldflags, "Wl,-z,now", from(Layer::user, "user"));
  o.add(OptionList::definitions, "X", from(Layer::user, "user"));
  o.finalize(true);
  CHECK(o.entries(OptionList::libraries).empty());
  CHECK(o.entries(OptionList::libraries_dirs).empty());
  CHECK(o.values(OptionList::ldflags) == std::vector<std::string>{"Wl,-z,now"});
  CHECK(o.values(OptionList::definitions) == std::vector<std::string>{"X"});
  CHECK(o.dropped().size() == 2);
}

TEST_CASE("de-duplication compares exact strings (' USE_CUDA' differs from 'USE_CUDA')",
          "[unit][options]") {
  BuildOptions o;
  o.add(OptionList::definitions, " USE_CUDA", from(Layer::device, "a"));
  o.add(OptionList::definitions, "USE_CUDA", from(Layer::user, "b"));
  o.finalize(false);
  CHECK(o.entries(OptionList::definitions).size() == 2);
}
