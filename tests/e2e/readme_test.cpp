// The README's examples run, so they cannot rot. A block runs when the line
// before its opening fence is `<!-- readme-test: run -->`; the blocks run in
// order in one bash -e session, as a reader would type them into one shell
// (a variable one block sets is there in the next), in a scratch directory
// holding the examples, kbuild first on PATH, and a home of its own. The npu
// examples run against the fake Ascend SDK the README's own command builds
// (examples/npu/fake-sdk). The set-up commands (scripts/setup, meson
// install) are never marked: they install packages and write outside the
// scratch directory.
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

// The marked blocks as one bash script; before each, a line on stderr naming
// where it starts, so a failure points at its block.
std::string session_script(const std::vector<Block>& blocks) {
  std::string script;
  for (const Block& b : blocks)
    script += "echo '@@ README.md:" + std::to_string(b.line) + "' >&2\n" + b.text;
  return script;
}

// The last block marker on stderr: the block that was running when it ended.
std::string last_block(const std::string& err) {
  auto at = err.rfind("@@ README.md:");
  return at == std::string::npos ? "" : err.substr(at, err.find('\n', at) - at);
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

TEST_CASE("the README's npu examples build the fake SDK with the example script, then use it",
          "[e2e][readme]") {
  std::string all;
  for (const Block& b : marked_blocks(source_root() + "/README.md")) all += b.text;
  auto sdk = all.find("examples/npu/fake-sdk fake-ascend && . fake-ascend/set_env.sh");
  REQUIRE(sdk != std::string::npos);
  auto npu = all.find("kbuild --device npu examples/npu/kernel.cpp");
  REQUIRE(npu != std::string::npos);
  CHECK(sdk < npu);
  CHECK(all.find("kbuild --device myacc") != std::string::npos);
}

TEST_CASE("every marked README block runs, in one shell", "[e2e][readme]") {
  TempDir home, scratch;
  fs::copy(source_root() + "/examples", scratch / "examples", fs::copy_options::recursive);
  std::map<std::string, std::string> env;
  env["PATH"] = fs::path(kbuild_binary()).parent_path().string() + ":" + std::getenv("PATH");
  env["HOME"] = home.str();
  env["XDG_CONFIG_HOME"] = home / ".config";
  env["XDG_CACHE_HOME"] = home / ".cache";
  std::vector<Block> blocks = marked_blocks(source_root() + "/README.md");
  RunResult r = run(
      {"/usr/bin/env", "-C", scratch.str(), "/bin/bash", "-e", "-c", session_script(blocks)}, env,
      {"KBUILD_CONFIG_PATH", "KBUILD_CACHE_DIR", "CXX", "KBUILD_DATA_DIR", "KBUILD_TORCH_ROOT",
       "KBUILD_TORCH_NPU_ROOT", "ASCEND_HOME_PATH", "LIBTORCH_NPU_PATH", "MYACC_HOME",
       "KBUILD_REMOTE_CACHE"});
  INFO("failed in the block at " << last_block(r.err) << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(last_block(r.err) == "@@ README.md:" + std::to_string(blocks.back().line));
  // What the blocks say they make (--check-load has loaded each library).
  for (const char* made :
       {"softmax.so", "kernel.so", "k.o", "myacc.so", "a.so", "b.so", "report.json",
        "fake-ascend/set_env.sh", "fake-ascend/Ascend/latest/lib64/libascendcl.so"})
    CHECK(fs::exists(scratch / made));
  // The device file the README writes is registered (devices), explained
  // with its own file as the provider, and doctor (exit 0 under bash -e)
  // had nothing to warn about.
  CHECK(r.out.find("\nmyacc\tdevice file (replace)\t") != std::string::npos);
  CHECK(r.out.find("config myacc  " + (home / ".config/kbuild/devices.d/myacc.json:")) !=
        std::string::npos);
  CHECK(r.out.find(", 0 warnings, 0 failures") != std::string::npos);
  CHECK(r.err.find("cache: hit") != std::string::npos);
  CHECK(read_file(scratch / "report.json").find("\"schema\": \"kbuild-report/1\"") !=
        std::string::npos);
}
