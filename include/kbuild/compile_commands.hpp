// The JSON compilation database (compile_commands.json) clangd and
// clang-tidy read: one entry per source, added or replaced by (file, output).
#pragma once

#include <string>
#include <vector>

namespace kbuild {

// Updates the database at `path` under an exclusive lock on `path + ".lock"`
// (parallel builds each get their entry), writing it atomically. Returns an
// error message, empty on success. A file that is not a JSON array is an
// error, never overwritten.
std::string update_compile_commands(const std::string& path, const std::string& directory,
                                    const std::vector<std::string>& argv,
                                    const std::vector<std::string>& sources,
                                    const std::string& output);

}  // namespace kbuild
