// The JSON compilation database (compile_commands.json) clangd and
// clang-tidy read: one entry per source, added or replaced by (file, output),
// both written absolute so that every spelling of a path is one entry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kbuild/error.hpp"
#include "plan/plan.hpp"

namespace kbuild {

// What an update that did not fail did. A database that holds something
// else (not JSON, not an array of compile commands) is left as it is: no
// reason not to build, but worth a warning.
struct DatabaseUpdate {
  std::string left_alone;  // why the database was left as it is; "" when written
};

// Updates the database at `path` under an exclusive lock on `path + ".lock"`
// (parallel builds each get their entry), writing it atomically. A symlink
// is followed: its target is updated, the link stays. A path that is not a
// regular file (a FIFO, a device node) is refused, never replaced.
Result<DatabaseUpdate> update_compile_commands(const std::string& path,
                                               const std::string& directory,
                                               const std::vector<std::string>& argv,
                                               const std::vector<std::string>& sources,
                                               const std::string& output);

// Records each compile step of a plan (or its one command) in `database`,
// exactly as a dry run or a build plans them; a split build's link, which
// compiles nothing, is left out. Throws Error (output) when the database
// cannot be written; returns the error for one that is not kbuild's to
// change (not a compile database), which does not stop the build.
std::optional<Error> record_compile_commands(const std::string& database,
                                             const std::vector<Step>& steps,
                                             const std::vector<std::string>& sources);

}  // namespace kbuild
