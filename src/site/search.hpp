// search: where a library a build names is found, as the linker and the dynamic loader would.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "util/process.hpp"

// Where doctor looks for the libraries a build names: the files a -l name
// can be in a directory, and the shared libraries the dynamic loader would
// find. (What a build's compiler and linker actually read is observed:
// run/observation.)
namespace kbuild {

// The files `-l name` can be in `dir`: lib<name>.so, then lib<name>.a.
std::vector<std::string> library_files(const std::string& name, const std::string& dir);

// The first directory of LD_LIBRARY_PATH, then the system's library dirs,
// holding lib<name>.so or a versioned lib<name>.so.N; nullopt: none.
std::optional<std::string> find_shared_library(const std::string& name, const Environment& env);

}  // namespace kbuild
