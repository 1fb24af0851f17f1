// A program embedding libkbuild: plans the build of a kernel for a device
// through the Driver, builds it (through kbuild's cache, as `kbuild` would),
// loads the library it made and calls its entry point. Built against the
// installed headers only:
// `g++ -std=c++20 build_kernel.cpp $(pkg-config --cflags --libs kbuild) -ldl`.
#include <dlfcn.h>

#include <filesystem>
#include <iostream>

#include "kbuild/driver.hpp"

namespace {

// What the build says as it goes: warnings on stderr, the rest dropped.
class Listener : public kbuild::BuildListener {
 public:
  void warnings(const std::vector<std::string>& lines) override {
    for (const std::string& line : lines) std::cerr << "build_kernel: warning: " << line << '\n';
  }
  void notes(const std::vector<std::string>& /*lines*/) override {}
  void plan_notes(const std::vector<std::string>& /*lines*/) override {}
  void info(const std::string& /*line*/) override {}
};

// Loads the library at `path` and calls `int symbol()` in it (by its
// absolute path: dlopen searches the library path for a bare name).
int call_kernel(const std::string& path, const std::string& symbol) {
  const std::string absolute = std::filesystem::absolute(path).string();
  void* library = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) throw kbuild::Error(kbuild::ErrorKind::load_failed, dlerror());
  auto* entry = reinterpret_cast<int (*)()>(dlsym(library, symbol.c_str()));
  if (!entry) {
    const std::string why = dlerror();
    dlclose(library);
    throw kbuild::Error(kbuild::ErrorKind::load_failed, why);
  }
  const int answer = entry();
  dlclose(library);
  return answer;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: build_kernel DEVICE SOURCE OUTPUT SYMBOL\n";
    return 2;
  }
  try {
    const kbuild::Environment env = kbuild::Environment::from_process();
    kbuild::SessionRequest options;
    options.site.no_torch = true;  // plain C++: no torch layer
    kbuild::Driver driver(options, env);

    kbuild::BuildRequest request;
    request.query.device_type = argv[1];
    request.use_torch = false;
    request.sources = {argv[2]};
    request.output = argv[3];
    Listener listener;
    // The plan first (what --dry-run prints), then the same plan run.
    for (const std::string& line : driver.dry_run(request, listener))
      std::cout << "plan: " << line << '\n';
    const kbuild::BuiltKernel built = driver.build(request, listener);
    std::cout << "built: " << built.output << " (cache: " << built.cache << ")\n";
    std::cout << argv[4] << "() = " << call_kernel(built.output, argv[4]) << '\n';
    return 0;
  } catch (const kbuild::Error& e) {
    std::cerr << "build_kernel: " << e.what() << '\n';
    return 1;
  }
}
