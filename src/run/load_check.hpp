// load_check: the parts only the library uses (the API: kbuild/load_check.hpp).
#pragma once

#include <string>
#include <vector>

// The child side of the load check (load_check.hpp): open a built library
// the way its users will, with the system's dynamic loader.
namespace kbuild {

// dlopen(RTLD_NOW) and dlsym each symbol. Returns 0 when all is well, else 1
// with the reason in `message` (one line per problem).
int probe_library(const std::string& library, const std::vector<std::string>& symbols,
                  std::string& message);

}  // namespace kbuild
