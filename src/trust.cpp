#include "kbuild/trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;

namespace kbuild {
namespace {

const char* const kOverride = ", or pass --allow-untrusted-config if you trust it";

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// What is wrong with `path`'s owner or mode ("" when nothing), and the fix.
struct Finding {
  std::string problem;
  std::string fix;
};

std::optional<Finding> inspect(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return Finding{"is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
                       std::to_string(::geteuid()) + ") or root",
                   "chown it"};
  if (st.st_mode & S_IWOTH)
    return Finding{"is world-writable (mode " + octal_mode(st.st_mode) + ")",
                   "run chmod o-w " + path};
  return std::nullopt;
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
  auto finding = inspect(dir.string());
  if (!finding) return std::nullopt;
  // Anyone able to write the directory can replace the file.
  std::string reason = what + " " + path + " is in " + dir.string() + ", which " +
                       finding->problem + "; refusing to use it: move it to a directory only " +
                       "you can write";
  return reason.append(kOverride);
}

}  // namespace kbuild
