// A program embedding libkbuild: plans the build of a kernel for a device
// through the Driver and prints the exact compiler line, as
// `kbuild --dry-run` would. Built against the installed headers only:
// `g++ -std=c++20 plan_kernel.cpp $(pkg-config --cflags --libs kbuild)`.
#include <iostream>

#include "kbuild/driver.hpp"

namespace {

// What the build says as it goes: warnings on stderr, the rest dropped.
class Listener : public kbuild::BuildListener {
 public:
  void warnings(const std::vector<std::string>& lines) override {
    for (const std::string& line : lines) std::cerr << "plan_kernel: warning: " << line << '\n';
  }
  void notes(const std::vector<std::string>& /*lines*/) override {}
  void plan_notes(const std::vector<std::string>& /*lines*/) override {}
  void info(const std::string& /*line*/) override {}
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: plan_kernel DEVICE SOURCE OUTPUT\n";
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
    // Planned only, as --dry-run: nothing is compiled or written.
    for (const std::string& line : driver.dry_run(request, listener)) std::cout << line << '\n';
    return 0;
  } catch (const kbuild::Error& e) {
    std::cerr << "plan_kernel: " << e.what() << '\n';
    return 1;
  }
}
