#include "util/atomic_output.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>

#include "kbuild/error.hpp"
#include "util/file_util.hpp"

namespace fs = std::filesystem;

namespace kbuild {

namespace {

std::string directory_of(const std::string& output) {
  std::string dir = fs::path(output).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string work_prefix(const std::string& name) {
  return "." + name + ".kbuild-tmp.";
}
// A work directory is made under this name and locked before it is renamed
// to its work_prefix name: the clean-up never sees it unlocked.
std::string new_prefix(const std::string& name) {
  return "." + name + ".kbuild-new.";
}
// Only a build that died between mkdir and rename leaves a "new" directory.
constexpr int kNewDirGraceSeconds = 60;

// Removes `name` in `dir_fd` when no live build holds its lock (and, for a
// directory still being made, when it is old).
void remove_if_dead(int dir_fd, const std::string& name, const std::string& path, bool is_new) {
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) ::unlinkat(dir_fd, name.c_str(), 0);  // a link never is ours
    return;
  }
  UniqueFd held(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid()) return;  // not ours to remove
  if (is_new && std::time(nullptr) - st.st_ctim.tv_sec < kNewDirGraceSeconds) return;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return;  // a live build holds it
  (void)remove_tree_at(dir_fd, name, path);
}

void remove_dead_in(int dir_fd, const std::string& dir, const std::string& name) {
  const std::string prefix = work_prefix(name), fresh = new_prefix(name);
  int copy = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return;
  DIR* listing = ::fdopendir(copy);
  if (!listing) {
    ::close(copy);
    return;
  }
  std::vector<std::pair<std::string, bool>> dead;
  while (struct dirent* e = ::readdir(listing)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
      dead.emplace_back(e->d_name, false);
    if (std::strncmp(e->d_name, fresh.c_str(), fresh.size()) == 0)
      dead.emplace_back(e->d_name, true);
  }
  ::closedir(listing);
  for (const auto& [entry, is_new] : dead) remove_if_dead(dir_fd, entry, dir + "/" + entry, is_new);
}

}  // namespace

void remove_dead_work_dirs(const std::string& output) {
  UniqueFd dir(::open(directory_of(output).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid())
    remove_dead_in(dir.get(), directory_of(output), fs::path(output).filename().string());
}

AtomicOutput::AtomicOutput(const std::string& output)
    : output_(output), name_(fs::path(output).filename().string()) {
  const std::string dir = directory_of(output);
  dir_fd_ = UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd_.valid())
    throw Error(ErrorKind::output, "cannot open output directory " + dir + ": " +
                                       std::strerror(errno) + "; create it first");
  refuse_special_output();
  remove_dead_in(dir_fd_.get(), dir, name_);
  const std::string suffix = unique_suffix();
  const std::string making = new_prefix(name_) + suffix;
  work_name_ = work_prefix(name_) + suffix;
  work_path_ = (fs::path(dir) / work_name_).string();
  if (::mkdirat(dir_fd_.get(), making.c_str(), 0700) != 0)
    throw Error(ErrorKind::output, "cannot write beside " + output + ": " + std::strerror(errno) +
                                       "; choose a writable output directory");
  work_fd_ = UniqueFd(
      ::openat(dir_fd_.get(), making.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat work {};
  // Someone who can write the directory could have swapped in their own.
  if (!work_fd_.valid() || ::fstat(work_fd_.get(), &work) != 0 || work.st_uid != ::geteuid() ||
      (work.st_mode & 077) != 0 || ::flock(work_fd_.get(), LOCK_EX | LOCK_NB) != 0 ||
      ::renameat(dir_fd_.get(), making.c_str(), dir_fd_.get(), work_name_.c_str()) != 0) {
    work_fd_.reset();
    (void)remove_tree_at(dir_fd_.get(), making, dir + "/" + making);
    throw Error(ErrorKind::output, "cannot make a private work directory beside " + output +
                                       "; choose an output directory only you can write");
  }
  result_path_ = work_path_ + "/" + name_;
  started_ = work.st_ctim;
}

void AtomicOutput::discard_result() const {
  ::unlinkat(work_fd_.get(), name_.c_str(), 0);
}

std::string AtomicOutput::depfile_path() {
  if (work_path_.find(' ') == std::string::npos) return scratch("deps.d");
  if (private_tmp_.empty()) {
    const std::string base = "/tmp";
    std::string pattern = base + "/kbuild-deps.XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw Error(ErrorKind::output, "cannot make a private directory in " + base + ": " +
                                         std::strerror(errno) +
                                         "; choose an output path without blanks");
    private_tmp_ = pattern;
  }
  return private_tmp_ + "/deps.d";
}

AtomicOutput::~AtomicOutput() {
  if (!private_tmp_.empty()) {
    std::error_code ignored;
    fs::remove_all(private_tmp_, ignored);  // made by mkdtemp: ours alone
  }
  // Removed through the opened directory: whatever is at its name now.
  if (work_fd_.valid()) {
    int copy = ::dup(work_fd_.get());
    if (copy >= 0) {
      DIR* listing = ::fdopendir(copy);
      std::vector<std::string> names;
      if (listing) {
        while (struct dirent* e = ::readdir(listing))
          if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
            names.emplace_back(e->d_name);
        ::closedir(listing);
      } else {
        ::close(copy);
      }
      for (const std::string& n : names) (void)remove_tree_at(work_fd_.get(), n, scratch(n));
    }
    ::unlinkat(dir_fd_.get(), work_name_.c_str(), AT_REMOVEDIR);
  }
}

Result<UniqueFd> AtomicOutput::create_result(mode_t mode) const {
  UniqueFd fd(::openat(work_fd_.get(), name_.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return Failure{"cannot create " + result_path_ + ": " + std::strerror(errno)};
  return fd;
}

Result<UniqueFd> AtomicOutput::open_result() const {
  UniqueFd fd(
      ::openat(work_fd_.get(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid())
    return Failure{std::string("it wrote no ") + name_ + " (" + std::strerror(errno) + ")"};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Failure{"what it wrote is not a regular file"};
  return fd;
}

void AtomicOutput::refuse_special_output() const {
  struct stat st {};
  if (::fstatat(dir_fd_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISREG(st.st_mode))
    throw Error(ErrorKind::output, "output " + output_ +
                                       " exists and is not a regular file; refusing to replace "
                                       "it: remove it or choose another -o");
}

void AtomicOutput::commit() {
  Result<UniqueFd> result = open_result();
  if (!result)
    throw Error(ErrorKind::output, "cannot move the result into " + output_ + ": " + result.why());
  refuse_special_output();  // again: it may have appeared while the build ran
  if (::renameat(work_fd_.get(), name_.c_str(), dir_fd_.get(), name_.c_str()) != 0)
    throw Error(ErrorKind::output,
                "cannot move the result into " + output_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace kbuild
