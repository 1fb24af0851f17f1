// The JSON compilation database (compile_commands.json) clangd and
// clang-tidy read: one entry per source, added or replaced by (file, output),
// both written absolute so that every spelling of a path is one entry.
#pragma once

#include <string>
#include <vector>

namespace kbuild {

// What became of an update. A database that holds something else (not JSON,
// not an array of compile commands) is `foreign`: left as it is, and no
// reason not to build.
struct CompileCommandsUpdate {
  std::string error;  // empty: written
  bool foreign = false;
};

// Updates the database at `path` under an exclusive lock on `path + ".lock"`
// (parallel builds each get their entry), writing it atomically. A symlink
// is followed: its target is updated, the link stays. A path that is not a
// regular file (a FIFO, a device node) is refused, never replaced.
CompileCommandsUpdate update_compile_commands(const std::string& path, const std::string& directory,
                                              const std::vector<std::string>& argv,
                                              const std::vector<std::string>& sources,
                                              const std::string& output);

}  // namespace kbuild
