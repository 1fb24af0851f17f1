// search: where a header or library a build names is found, as the compiler and linker would; the
// parts the rest of the library uses.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "util/process.hpp"

// Where the compiler looks for headers: its include search list for a
// command line, as `-E -v` prints it.
namespace kbuild {

// The include search list the compiler uses for `argv` (its -v output),
// quote dirs first, as normal paths; empty when it cannot be read.
std::vector<std::string> include_search_dirs(const std::vector<std::string>& argv,
                                             const Environment& env, ProcessRunner& processes);

}  // namespace kbuild

// The one place kbuild looks for libraries: the directories the linker
// searches for -l, the files a -l name can be in them, and the shared
// libraries the dynamic loader would find.
namespace kbuild {

// The directories the linker searches for -l (-L, then LIBRARY_PATH, then
// the compiler's own), in order, as normal paths.
std::vector<std::string> library_search_dirs(const std::string& compiler,
                                             const std::vector<std::string>& libraries_dirs,
                                             const Environment& env, ProcessRunner& processes);

// The files `-l name` can be in `dir`: lib<name>.so, then lib<name>.a.
std::vector<std::string> library_files(const std::string& name, const std::string& dir);

// The first directory of LD_LIBRARY_PATH, then the system's library dirs,
// holding lib<name>.so or a versioned lib<name>.so.N; nullopt: none.
std::optional<std::string> find_shared_library(const std::string& name, const Environment& env);

}  // namespace kbuild
