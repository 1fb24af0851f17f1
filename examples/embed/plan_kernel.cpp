// A program embedding libkbuild: plans the build of a kernel for a device
// and prints the exact compiler line, as `kbuild --dry-run` would. Built
// against the installed headers only: `g++ -std=c++20 plan_kernel.cpp
// $(pkg-config --cflags --libs kbuild)`.
#include <iostream>

#include "kbuild/build_context.hpp"
#include "kbuild/build_plan.hpp"
#include "kbuild/error.hpp"
#include "kbuild/shell.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: plan_kernel DEVICE SOURCE OUTPUT\n";
    return 2;
  }
  try {
    const kbuild::Environment env = kbuild::Environment::from_process();
    kbuild::SessionOptions options;
    options.site.no_torch = true;  // plain C++: no torch layer
    const kbuild::Session session(options, env);

    kbuild::BuildRequest request;
    request.query.device_type = argv[1];
    request.use_torch = false;
    request.sources = {argv[2]};
    request.output = argv[3];
    const kbuild::BuildPlan plan = kbuild::plan_build(request, session.registry, session.context());
    std::cout << kbuild::shell_join(plan.command.argv) << '\n';
    return 0;
  } catch (const kbuild::Error& e) {
    std::cerr << "plan_kernel: " << e.what() << '\n';
    return 1;
  }
}
