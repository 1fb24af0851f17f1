#include "devices/trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "kbuild/trusted_dir.hpp"

namespace fs = std::filesystem;

namespace kbuild {
namespace {

const char* const kOverride = ", or pass --allow-untrusted-config if you trust it";

// What is wrong with `path`'s owner or mode ("" when nothing), and the fix.
struct Finding {
  std::string problem;
  std::string fix;
};

// The rule is check_ownership()'s, the one for caches too.
std::optional<Finding> inspect_status(const struct stat& st, const std::string& path) {
  auto owned = check_ownership(st);
  if (owned) return std::nullopt;
  const std::string& problem = owned.why();
  if (problem.rfind("is owned", 0) == 0) return Finding{problem, "chown it"};
  if (problem.rfind("is world-writable", 0) == 0) return Finding{problem, "run chmod o-w " + path};
  return Finding{problem, "run chmod g-w " + path};
}

std::optional<Finding> inspect(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return inspect_status(st, path);
}

Failure file_refused(const std::string& path, const std::string& what, const Finding& finding) {
  std::string why =
      what + " " + path + " " + finding.problem + "; refusing to use it: " + finding.fix;
  return Failure{why.append(kOverride)};
}

Failure directory_refused(const std::string& path, const std::string& what, const std::string& dir,
                          const Finding& finding) {
  // Anyone able to write the directory can replace the file.
  std::string why = what + " " + path + " is in " + dir + ", which " + finding.problem +
                    "; refusing to use it: move it to a directory only you can write";
  return Failure{why.append(kOverride)};
}

// The real path of `path` (symlinks resolved), or "" when it has none.
std::string real_path_of(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return "";
  std::string out = real;
  std::free(real);
  return out;
}

}  // namespace

Status check_trusted(const std::string& path, const std::string& what) {
  auto finding = inspect(path);
  if (!finding) return ok();
  return file_refused(path, what, *finding);
}

Status check_trusted_file(const std::string& path, const std::string& what) {
  if (auto own = check_trusted(path, what); !own) return own;
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec).parent_path();
  if (ec) return ok();
  if (auto finding = inspect(dir.string()))
    return directory_refused(path, what, dir.string(), *finding);
  // Reached through a symlink: the directories it leads to count too.
  std::string real = real_path_of(path);
  if (!real.empty() && real != fs::absolute(path, ec).lexically_normal().string())
    return check_trusted_real_path(real, path, what);
  return ok();
}

Status check_trusted_real_path(const std::string& real_path, const std::string& path,
                               const std::string& what) {
  fs::path dir = fs::path(real_path).parent_path();
  if (auto finding = inspect(dir.string()))
    return directory_refused(path, what, dir.string(), *finding);
  // Higher up, a shared directory with the sticky bit (/tmp) is fine: no one
  // else can rename what is in it.
  for (fs::path up = dir.parent_path(); !up.empty(); up = up.parent_path()) {
    struct stat st;
    if (::stat(up.c_str(), &st) == 0) {
      auto finding = inspect_status(st, up.string());
      bool shared_sticky = (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH) &&
                           (st.st_uid == ::geteuid() || st.st_uid == 0);
      if (finding && !shared_sticky) return directory_refused(path, what, up.string(), *finding);
    }
    if (up == up.root_path()) break;
  }
  return ok();
}

Status check_trusted_opened_file(int fd, const std::string& real_path, const std::string& path,
                                 const std::string& what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ok();  // the read that follows says why
  if (auto finding = inspect_status(st, path)) return file_refused(path, what, *finding);
  return check_trusted_real_path(real_path, path, what);
}

}  // namespace kbuild
