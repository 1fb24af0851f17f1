// The README's examples run, so they cannot rot. A block runs when the line
// before its opening fence is `<!-- readme-test: run -->`; each runs with
// bash -e in a scratch directory holding the examples and a kernel.cpp,
// kbuild first on PATH, and a fake Ascend SDK and torch_npu for the npu
// examples. The set-up commands (scripts/setup, meson install) are never
// marked: they install packages and write outside the scratch directory.
#include <catch2/catch.hpp>
#include <fstream>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

const std::string kMarker = "<!-- readme-test: run -->";

struct Block {
  int line = 0;  // of the opening fence, 1-based
  std::string text;
};

std::vector<Block> marked_blocks(const std::string& path) {
  std::ifstream in(path);
  std::vector<Block> blocks;
  bool marked = false;
  std::optional<Block> open;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (open) {
      if (line.rfind("```", 0) == 0) {
        blocks.push_back(*open);
        open.reset();
      } else {
        open->text += line + "\n";
      }
      continue;
    }
    if (line.rfind("```", 0) == 0 && marked) open = Block{number, ""};
    if (!line.empty()) marked = line == kMarker;
  }
  return blocks;
}

// A fake Ascend SDK and torch / torch_npu packages under `dir`, as the npu
// e2e tests build them.
std::map<std::string, std::string> fake_ascend(const TempDir& dir) {
  const std::string sdk = dir / "Ascend/latest", torch = dir / "site-packages/torch",
                    torch_npu = dir / "site-packages/torch_npu";
  const std::string fake = source_root() + "/tests/e2e/fake_ascend";
  fs::create_directories(sdk + "/include");
  fs::copy(fake + "/include", sdk + "/include", fs::copy_options::recursive);
  compile_shared_library(read_file(fake + "/runtime.cpp"), sdk + "/lib64/libruntime.so",
                         "libruntime.so");
  compile_shared_library(read_file(fake + "/ascendcl.cpp"), sdk + "/lib64/libascendcl.so",
                         "libascendcl.so",
                         {"-I" + sdk + "/include", "-L" + sdk + "/lib64", "-lruntime"});
  make_fake_torch(torch, true);
  compile_shared_library(read_file(fake + "/torch_npu.cpp"), torch_npu + "/lib/libtorch_npu.so",
                         "libtorch_npu.so");
  fs::create_directories(torch_npu + "/include/third_party/acl/inc");
  return {{"ASCEND_HOME_PATH", sdk},
          {"KBUILD_TORCH_ROOT", torch},
          {"KBUILD_TORCH_NPU_ROOT", torch_npu}};
}

}  // namespace

TEST_CASE("the README marks runnable blocks, and never the set-up commands", "[e2e][readme]") {
  std::vector<Block> blocks = marked_blocks(source_root() + "/README.md");
  CHECK(blocks.size() >= 2);
  for (const Block& b : blocks) {
    INFO("README.md:" << b.line);
    CHECK(b.text.find("scripts/setup") == std::string::npos);
    CHECK(b.text.find("meson install") == std::string::npos);
    CHECK(b.text.find("kbuild") != std::string::npos);
  }
}

TEST_CASE("every marked README block runs", "[e2e][readme]") {
  TempDir home, scratch, sdk;
  fs::copy(source_root() + "/examples", scratch / "examples", fs::copy_options::recursive);
  fs::copy_file(source_root() + "/examples/cpu/softmax_kernel.cpp", scratch / "kernel.cpp");
  std::map<std::string, std::string> env = fake_ascend(sdk);
  env["PATH"] = fs::path(kbuild_binary()).parent_path().string() + ":" + std::getenv("PATH");
  env["HOME"] = home.str();
  env["XDG_CONFIG_HOME"] = home / ".config";
  env["XDG_CACHE_HOME"] = home / ".cache";
  for (const Block& b : marked_blocks(source_root() + "/README.md")) {
    RunResult r = run({"/usr/bin/env", "-C", scratch.str(), "/bin/bash", "-e", "-c", b.text}, env,
                      {"KBUILD_CONFIG_PATH", "KBUILD_CACHE_DIR", "CXX", "KBUILD_DATA_DIR"});
    INFO("README.md:" << b.line << "\n" << b.text << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
  }
  // What the blocks say they make (--check-load has loaded softmax.so).
  CHECK(fs::exists(scratch / "softmax.so"));
  CHECK(fs::exists(scratch / "kernel.so"));
  CHECK(fs::exists(scratch / "k.o"));
}
