// Device files and exec-provider programs are code-adjacent: whoever can
// write them decides what kbuild compiles and runs. Like ssh and git, kbuild
// refuses them when someone other than the user (or root) could have put
// them there: a file or its directory that is world-writable, or owned by
// another user.
#pragma once

#include <optional>
#include <string>

namespace kbuild {

// Why `path` (a file or directory) is not trusted, with how to fix it, or
// nothing when it is. `what` names it in the message ("device file").
// A path that cannot be inspected is reported by the caller's own checks.
std::optional<std::string> untrusted_reason(const std::string& path, const std::string& what);

// As untrusted_reason, for a file and then the directory holding it, and
// when it is reached through a symlink, the directories of its real path.
std::optional<std::string> untrusted_file_reason(const std::string& path, const std::string& what);

// The directories of `real_path` (symlinks resolved) that someone else could
// write: its own directory as untrusted_reason says, and above it any not
// owned by you or root, or world-writable without the sticky bit. `path` is
// the name shown.
std::optional<std::string> untrusted_real_path_reason(const std::string& real_path,
                                                      const std::string& path,
                                                      const std::string& what);

// As untrusted_file_reason for a file already open as `fd` (checked with
// fstat: the file that will be read, whatever its name points to now) at
// `real_path`, named `path` in the message.
std::optional<std::string> untrusted_opened_file_reason(int fd, const std::string& real_path,
                                                        const std::string& path,
                                                        const std::string& what);

}  // namespace kbuild
