// trusted_dir: directories and files kbuild may trust (owner, modes, parents), where the cache
// lives, and outputs written whole or not at all.
#pragma once

#include <sys/stat.h>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/environment.hpp"
#include "kbuild/error.hpp"
#include "util/file_system.hpp"

// A directory kbuild keeps its own files in (the caches), used only through
// a descriptor opened once: nothing inside is reached through a symbolic
// link (every open is relative to an opened directory, with O_NOFOLLOW), and
// every directory and file is checked as it is opened. A cache that others
// can write could hand a user someone else's binary, so the rule is the one
// for device files: owned by the user or root, not writable by others
// (group-writable only when the group's one member is the owner, as
// OpenSSH's user-private-group rule).
namespace kbuild {

// ok() when a file or directory with this status is trusted, else what
// makes it untrusted ("is world-writable (mode 0777)"). The mode bits do not
// tell all: a POSIX ACL can let another user or group write a file that
// shows mode 0664 (the group bits are then the ACL's mask), and a
// directory's default ACL is given to everything created in it. So the
// rule reads the ACLs too, of the file open as `fd` (fgetxattr) or at
// `path` (getxattr, following a link as stat does), and refuses an entry
// that lets anyone but the owner, root or you write.
Status check_ownership(const struct stat& st, int fd);
Status check_ownership(const struct stat& st, const std::string& path,
                       const FileSystem& files = system_file_system());

// What the ACL in `xattr` (the bytes of system.posix_acl_access, or of
// system.posix_acl_default when `is_default`) lets someone other than
// `owner`, root or you write: ok() when nothing; a file system's own
// format, version 2, a header then {u16 tag, u16 perm, u32 id} entries.
Status check_acl(std::string_view xattr, uid_t owner, bool is_default);

// An open file descriptor, closed with the object.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset();

 private:
  int fd_ = -1;
};

// Writes all of `bytes` to `fd`; `path` names it in the failure.
Status write_all(int fd, std::string_view bytes, const std::string& path);
// Removes `name` in the directory open as `parent_fd` and everything under
// it, never following a link (`path` names it in the failure).
Status remove_tree_at(int parent_fd, const std::string& name, const std::string& path);

class TrustedDir {
 public:
  // Opens the directory at `path` (created with its parents when missing
  // and `create`), following links in `path` itself, and checks it.
  static Result<TrustedDir> open(const std::string& path, bool create);

  // A subdirectory ("a" or "a/b"), each part opened without following links
  // and checked; created when missing and `create`.
  Result<TrustedDir> sub(const std::string& name, bool create) const;

  // A regular, trusted file inside, opened for reading (its fstat into `st`,
  // when given).
  Result<UniqueFd> open_file(const std::string& name, struct stat* st = nullptr) const;
  // Its bytes, at most `limit` of them (a larger file is a failure).
  Result<std::string> read(const std::string& name, std::size_t limit = 64u << 20) const;
  // Writes `bytes` to a new file beside `name` and renames it over `name`.
  Status write_atomically(const std::string& name, const std::string& bytes) const;
  // Creates a new file (never an existing one, never through a link).
  Result<UniqueFd> create_file(const std::string& name, mode_t mode) const;

  // Renames within this directory, or into `to_dir`.
  Status rename(const std::string& from, const std::string& to) const;
  Status rename(const std::string& from, const TrustedDir& to_dir, const std::string& to) const;
  // Removes `name` and everything under it; a link is removed, never followed.
  Status remove_tree(const std::string& name) const;
  Status remove_file(const std::string& name) const;
  // Names of the entries (not . and ..).
  std::vector<std::string> list() const;
  bool exists(const std::string& name) const;
  // lstat of an entry.
  std::optional<struct stat> status(const std::string& name) const;
  // Sets the entry's modification time to now (LRU order).
  void touch(const std::string& name) const;

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  // Another descriptor for the same directory (close-on-exec).
  Result<TrustedDir> duplicate() const;

 private:
  TrustedDir(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::string path_;
};

// Opens `name` in `dir_fd` (AT_FDCWD: from the current directory), creating
// it, never through a symlink, and waits for an exclusive flock on it
// (unless `wait` is false: then errno EWOULDBLOCK when another holds it).
// Invalid (errno set) when it is not a regular file, when `trusted` and its
// owner fails the trust rule, or when it cannot be opened or locked. Closing
// the descriptor releases the lock.
UniqueFd lock_file(int dir_fd, const std::string& name, bool trusted, bool wait = true);

// Holds an exclusive flock on a trusted lock file inside `dir` while alive
// (with `wait` false, only one another does not hold: see lock_file).
class DirLock {
 public:
  DirLock(const TrustedDir& dir, const std::string& name, bool wait = true);
  bool held() const { return fd_.valid(); }

 private:
  UniqueFd fd_;
};

}  // namespace kbuild

// Where kbuild keeps its caches (outputs, precompiled headers, Python
// discovery), and opening that directory safely. A cache directory is
// marked with CACHEDIR.TAG (as ccache and others do, so backup tools skip
// it); kbuild adopts an unmarked directory only when it is empty or holds
// nothing but kbuild's own layout, and clears only what it recognises.
namespace kbuild {

// KBUILD_CACHE_DIR, else $XDG_CACHE_HOME/kbuild, else $HOME/.cache/kbuild;
// "" when none of them is set (then nothing is cached).
std::string cache_root(const Environment& env);

// What to say when cache_root() is "".
extern const char* const kNoCacheRoot;

// Opens `root` as kbuild's cache, checked like a device file (owner you or
// root, not writable by others). With `create`, a missing directory is
// created and marked. A failure says why it cannot be used and what to do.
Result<TrustedDir> open_cache_root(const std::string& root, bool create);

// <root>/discovery, created when missing, where kbuild remembers what it
// found out about this machine (Python, profiles, device files, ISA
// answers); the root is opened as open_cache_root(root, create_root) does.
// discovery/ stays open for the rest of the process: a dry run asks four
// times, and a later call only re-checks that `root` and discovery/ still
// are those directories and still trusted (two stats, not the dozen calls
// of opening them).
Result<TrustedDir> open_discovery_dir(const std::string& root, bool create_root);

// Removes every entry kbuild keeps in the cache (the marker stays).
Status clear_cache(const TrustedDir& root);

}  // namespace kbuild

// Device files and exec-provider programs are code-adjacent: whoever can
// write them decides what kbuild compiles and runs. Like ssh and git, kbuild
// refuses them when someone other than the user (or root) could have put
// them there: a file or its directory that is world-writable, or owned by
// another user.
namespace kbuild {

// ok() when `path` (a file or directory) is trusted, else a Failure saying
// why and how to fix it. `what` names it in the message ("device file").
// A path that cannot be inspected is reported by the caller's own checks.
// Every path is stated, resolved and its ACL read in `files` (a test's fake
// tree: owners, modes and ACLs set by hand, no other user needed).
Status check_trusted(const std::string& path, const std::string& what,
                     const FileSystem& files = system_file_system());

// As check_trusted, for a file and then the directory holding it, and
// when it is reached through a symlink, the directories of its real path.
Status check_trusted_file(const std::string& path, const std::string& what,
                          const FileSystem& files = system_file_system());

// The directories of `real_path` (symlinks resolved) that someone else could
// write: its own directory as check_trusted says, and above it any not
// owned by you or root, or world-writable without the sticky bit. `path` is
// the name shown.
Status check_trusted_real_path(const std::string& real_path, const std::string& path,
                               const std::string& what,
                               const FileSystem& files = system_file_system());

// As check_trusted_file for a file already open as `fd` (checked with
// fstat: the file that will be read, whatever its name points to now) at
// `real_path`, named `path` in the message.
Status check_trusted_opened_file(int fd, const std::string& real_path, const std::string& path,
                                 const std::string& what,
                                 const FileSystem& files = system_file_system());

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

 private:
  // Throws Error(output) when the output exists and is not a regular file.
  void refuse_special_output() const;
  std::string output_, name_, work_name_, work_path_, result_path_;
  UniqueFd dir_fd_, work_fd_;
  bool committed_ = false;
  struct timespec started_ {};
};

// Removes the work directories (and files of older kbuilds' temporaries)
// of `output` that no live build holds. Exposed for tests.
void remove_dead_work_dirs(const std::string& output);

}  // namespace kbuild
