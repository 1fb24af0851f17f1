// A kernel in its own directory, built from there with relative paths (as
// Inductor and build systems run), through kbuild or through kbuild cc: the
// e2e cases about what a cache entry depends on run each change both ways.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace kbuild_test {

enum class KernelMode { build, cc };

constexpr KernelMode kKernelModes[] = {KernelMode::build, KernelMode::cc};

inline const char* kernel_mode_name(KernelMode m) {
  return m == KernelMode::cc ? "kbuild cc" : "kbuild";
}

// Whether -v said the output came from the cache.
inline bool cache_hit(const RunResult& r) {
  return r.err.find("cache: hit") != std::string::npos;
}

struct KernelCase {
  TempDir home, dir;
  KernelMode mode;
  explicit KernelCase(KernelMode m) : mode(m) {}
  RunResult build(const std::vector<std::string>& flags,
                  std::map<std::string, std::string> env = {}, const std::string& source = "k.cpp",
                  bool expect_ok = true) {
    std::vector<std::string> args;
    if (mode == KernelMode::cc) {
      args = {"cc", "--", "g++", "-shared", "-fPIC", source};  // libraries after the source
      args.insert(args.end(), flags.begin(), flags.end());
      args.insert(args.end(), {"-o", "k.so"});
      env["KBUILD_VERBOSE"] = "1";
    } else {
      args = {"--no-torch", source, "-o", "k.so", "-v"};
      args.insert(args.end(), flags.begin(), flags.end());
    }
    const std::filesystem::path before = std::filesystem::current_path();
    std::filesystem::current_path(dir.path());
    RunResult r = run_kbuild(args, home.str(), std::move(env));
    std::filesystem::current_path(before);
    INFO(r.err);
    if (expect_ok) CHECK(r.exit_code == 0);
    return r;
  }
  int value() { return call_f(dir / "k.so"); }
  // Written with a later mtime than anything the last build saw.
  void rewrite(const std::string& rel, const std::string& text) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    write_file(dir / rel, text);
  }
  // The local cache entry's manifest (CBOR), read with the JSON library.
  nlohmann::json manifest() const {
    nlohmann::json found;
    for (const auto& e : std::filesystem::recursive_directory_iterator(home.path()))
      if (e.path().filename() == "manifest" &&
          e.path().string().find("/objects/") != std::string::npos)
        found = nlohmann::json::from_cbor(read_file(e.path()));
    return found;
  }
};

}  // namespace kbuild_test
