// trusted_dir: the parts only the library uses (the API: kbuild/trusted_dir.hpp).
#pragma once

#include <sys/stat.h>
#include <string>

#include "kbuild/error.hpp"
#include "kbuild/trusted_dir.hpp"

// Device files and exec-provider programs are code-adjacent: whoever can
// write them decides what kbuild compiles and runs. Like ssh and git, kbuild
// refuses them when someone other than the user (or root) could have put
// them there: a file or its directory that is world-writable, or owned by
// another user.
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

// The output appears whole or not at all. Each build works in a private
// directory beside the output (".NAME.kbuild-tmp.PID.N/", mode 0700, locked
// with flock while the build runs): the compiler writes the result there,
// and only a result that is a regular file is renamed over the output, from
// the opened directory to the opened directory (renameat), so no link swapped
// in by someone else is ever followed. Work directories whose lock is free
// belong to builds that died; the next build of the same output removes
// them (a lock, unlike a pid, is seen across PID namespaces and hosts that
// share the directory).
namespace kbuild {

class AtomicOutput {
 public:
  // Opens the output's directory, refuses an output that exists and is not
  // a regular file, removes dead builds' work directories and creates this
  // build's. Throws Error(output) naming what to do.
  explicit AtomicOutput(const std::string& output);
  ~AtomicOutput();  // removes the work directory and all in it
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  // Where the result is written: <work dir>/<output's file name>.
  const std::string& path() const { return result_path_; }
  // A file in the work directory (a split build's objects, a depfile).
  std::string scratch(const std::string& name) const { return work_path_ + "/" + name; }
  const std::string& work_dir() const { return work_path_; }
  // Creates the result (for a cache hit): new, never through a link, with
  // `mode` less the umask, as the compiler would create it.
  Result<UniqueFd> create_result(mode_t mode) const;
  // The result as it is now: a regular file in the work directory (never a
  // link), opened; a failure says what is wrong.
  Result<UniqueFd> open_result() const;
  // Removes a partly written result (a cache hit that proved damaged).
  void discard_result() const;
  // Renames the result over the output. Throws Error(output).
  void commit();

  // The file-system time the work directory was made: any input changed
  // at or after it may have changed while the build read it.
  const struct timespec& started() const { return started_; }
  // A file name for the compiler's dependency list without blanks (g++
  // ends SUNPRO_DEPENDENCIES's file name at the first blank): in the work
  // directory, or in a private directory under /tmp.
  std::string depfile_path();

 private:
  // Throws Error(output) when the output exists and is not a regular file.
  void refuse_special_output() const;
  std::string output_, name_, work_name_, work_path_, result_path_;
  UniqueFd dir_fd_, work_fd_;
  bool committed_ = false;
  struct timespec started_ {};
  std::string private_tmp_;  // made by depfile_path() when needed
};

// Removes the work directories (and files of older kbuilds' temporaries)
// of `output` that no live build holds. Exposed for tests.
void remove_dead_work_dirs(const std::string& output);

}  // namespace kbuild
