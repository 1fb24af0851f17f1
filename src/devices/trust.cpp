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

// The rule is ownership_problem()'s, the one for caches too.
std::optional<Finding> inspect_status(const struct stat& st, const std::string& path) {
  auto problem = ownership_problem(st);
  if (!problem) return std::nullopt;
  if (problem->rfind("is owned", 0) == 0) return Finding{*problem, "chown it"};
  if (problem->rfind("is world-writable", 0) == 0)
    return Finding{*problem, "run chmod o-w " + path};
  return Finding{*problem, "run chmod g-w " + path};
}

std::optional<Finding> inspect(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return inspect_status(st, path);
}

std::string directory_reason(const std::string& path, const std::string& what,
                             const std::string& dir, const Finding& finding) {
  // Anyone able to write the directory can replace the file.
  std::string reason = what + " " + path + " is in " + dir + ", which " + finding.problem +
                       "; refusing to use it: move it to a directory only you can write";
  return reason.append(kOverride);
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

std::optional<std::string> untrusted_reason(const std::string& path, const std::string& what) {
  auto finding = inspect(path);
  if (!finding) return std::nullopt;
  std::string reason =
      what + " " + path + " " + finding->problem + "; refusing to use it: " + finding->fix;
  return reason.append(kOverride);
}

std::optional<std::string> untrusted_file_reason(const std::string& path, const std::string& what) {
  if (auto reason = untrusted_reason(path, what)) return reason;
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec).parent_path();
  if (ec) return std::nullopt;
  if (auto finding = inspect(dir.string()))
    return directory_reason(path, what, dir.string(), *finding);
  // Reached through a symlink: the directories it leads to count too.
  std::string real = real_path_of(path);
  if (!real.empty() && real != fs::absolute(path, ec).lexically_normal().string())
    return untrusted_real_path_reason(real, path, what);
  return std::nullopt;
}

std::optional<std::string> untrusted_real_path_reason(const std::string& real_path,
                                                      const std::string& path,
                                                      const std::string& what) {
  fs::path dir = fs::path(real_path).parent_path();
  if (auto finding = inspect(dir.string()))
    return directory_reason(path, what, dir.string(), *finding);
  // Higher up, a shared directory with the sticky bit (/tmp) is fine: no one
  // else can rename what is in it.
  for (fs::path up = dir.parent_path(); !up.empty(); up = up.parent_path()) {
    struct stat st;
    if (::stat(up.c_str(), &st) == 0) {
      auto finding = inspect_status(st, up.string());
      bool shared_sticky = (st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH) &&
                           (st.st_uid == ::geteuid() || st.st_uid == 0);
      if (finding && !shared_sticky) return directory_reason(path, what, up.string(), *finding);
    }
    if (up == up.root_path()) break;
  }
  return std::nullopt;
}

std::optional<std::string> untrusted_opened_file_reason(int fd, const std::string& real_path,
                                                        const std::string& path,
                                                        const std::string& what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::nullopt;  // the read that follows says why
  if (auto finding = inspect_status(st, path)) {
    std::string reason =
        what + " " + path + " " + finding->problem + "; refusing to use it: " + finding->fix;
    return reason.append(kOverride);
  }
  return untrusted_real_path_reason(real_path, path, what);
}

}  // namespace kbuild
