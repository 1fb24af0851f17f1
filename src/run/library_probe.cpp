#include "run/library_probe.hpp"

#include <dlfcn.h>

namespace kbuild {

int probe_library(const std::string& library, const std::vector<std::string>& symbols,
                  std::string& message) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    message = dlerror();
    return 1;
  }
  int status = 0;
  for (const std::string& s : symbols) {
    if (!dlsym(handle, s.c_str())) {
      if (!message.empty()) message += '\n';
      message.append("missing symbol: ").append(s);
      status = 1;
    }
  }
  return status;
}

}  // namespace kbuild
