// The JSON compilation database (compile_commands.json) clangd and
// clang-tidy read: one entry per source, added or replaced by (file, output),
// both written absolute so that every spelling of a path is one entry.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "plan/plan.hpp"

namespace kbuild {

// What an update that did not fail did. A database that holds something
// else (not JSON, not an array of compile commands) is left as it is: no
// reason not to build, but worth a warning.
struct DatabaseUpdate {
  std::string left_alone;  // why the database was left as it is; "" when written
};

// How long a write waits for the database's lock unless
// KBUILD_COMPILE_COMMANDS_LOCK_TIMEOUT_MS says otherwise.
inline constexpr std::chrono::milliseconds kCompileCommandsLockWait{60000};

// KBUILD_COMPILE_COMMANDS_LOCK_TIMEOUT_MS (a whole number of milliseconds
// above 0), else kCompileCommandsLockWait. Throws Error(usage) for another
// value.
std::chrono::milliseconds compile_commands_lock_wait(const Environment& env);

// Updates the database at `path` under an exclusive lock on `path + ".lock"`
// (parallel builds each get their entry), writing it atomically. A symlink
// is followed as the kernel's protected_symlinks would (never another
// user's link in a sticky directory such as /tmp): its target is updated,
// the link stays. A path that is not a regular file (a FIFO, a device node)
// is refused, never replaced; so is a lock another user owns, and a lock
// still held after `lock_wait`.
Result<DatabaseUpdate> update_compile_commands(
    const std::string& path, const std::string& directory, const std::vector<std::string>& argv,
    const std::vector<std::string>& sources, const std::string& output,
    std::chrono::milliseconds lock_wait = kCompileCommandsLockWait);

// Records each compile step of a plan (or its one command) in `database`,
// exactly as a dry run or a build plans them; a split build's link, which
// compiles nothing, is left out. Throws Error (output) when the database
// cannot be written; a database that is not kbuild's to change (not a
// compile database) is a failure of kind output, which does not stop the
// build (the caller throws it after).
Status record_compile_commands(const std::string& database, const std::vector<Step>& steps,
                               const std::vector<std::string>& sources,
                               std::chrono::milliseconds lock_wait = kCompileCommandsLockWait);

}  // namespace kbuild
