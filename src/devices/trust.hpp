// Device files and exec-provider programs are code-adjacent: whoever can
// write them decides what kbuild compiles and runs. Like ssh and git, kbuild
// refuses them when someone other than the user (or root) could have put
// them there: a file or its directory that is world-writable, or owned by
// another user.
#pragma once

#include <string>

#include "kbuild/result.hpp"

namespace kbuild {

// ok() when `path` (a file or directory) is trusted, else a Failure saying
// why and how to fix it. `what` names it in the message ("device file").
// A path that cannot be inspected is reported by the caller's own checks.
Status check_trusted(const std::string& path, const std::string& what);

// As check_trusted, for a file and then the directory holding it, and
// when it is reached through a symlink, the directories of its real path.
Status check_trusted_file(const std::string& path, const std::string& what);

// The directories of `real_path` (symlinks resolved) that someone else could
// write: its own directory as check_trusted says, and above it any not
// owned by you or root, or world-writable without the sticky bit. `path` is
// the name shown.
Status check_trusted_real_path(const std::string& real_path, const std::string& path,
                               const std::string& what);

// As check_trusted_file for a file already open as `fd` (checked with
// fstat: the file that will be read, whatever its name points to now) at
// `real_path`, named `path` in the message.
Status check_trusted_opened_file(int fd, const std::string& real_path, const std::string& path,
                                 const std::string& what);

}  // namespace kbuild
