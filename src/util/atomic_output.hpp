// The output appears whole or not at all. Each build works in a private
// directory beside the output (".NAME.kbuild-tmp.PID.N/", mode 0700, locked
// with flock while the build runs): the compiler writes the result there,
// and only a result that is a regular file is renamed over the output, from
// the opened directory to the opened directory (renameat), so no link swapped
// in by someone else is ever followed. Work directories whose lock is free
// belong to builds that died; the next build of the same output removes
// them (a lock, unlike a pid, is seen across PID namespaces and hosts that
// share the directory).
#pragma once

#include <sys/stat.h>

#include <string>

#include "kbuild/result.hpp"
#include "kbuild/trusted_dir.hpp"

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
