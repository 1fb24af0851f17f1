// kbuild-load-check LIBRARY [SYMBOL...]: the load check's child process.
// A separate, dynamically linked program because kbuild itself is linked
// statically (faster start), and a static program must not dlopen a library
// that brings its own libc. Prints why the library does not load, if it
// does not; exits 0 when it loads and has every SYMBOL.
#include <iostream>

#include "run/load_check.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: kbuild-load-check LIBRARY [SYMBOL...] (run by kbuild --check-load)\n";
    return 2;
  }
  std::string message;
  int status =
      kbuild::probe_library(argv[1], std::vector<std::string>(argv + 2, argv + argc), message);
  if (!message.empty()) std::cout << message << "\n";
  return status;
}
