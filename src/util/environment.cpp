
#include "kbuild/environment.hpp"
#include "util/environment.hpp"

#include <unistd.h>
#include <unistd.h>  // environ (g++ defines _GNU_SOURCE)
#include <filesystem>
#include <string_view>

#include "kbuild/error.hpp"
#include "kbuild_config.h"

namespace kbuild {

Environment Environment::from_process() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::get(const std::string& name) const {
  auto it = vars_.find(name);
  std::optional<std::string> value;
  if (it != vars_.end()) value = it->second;
  consulted_[name] = value;
  return value;
}

std::vector<std::string> Environment::entries() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : vars_) out.push_back(name + "=" + value);
  return out;
}

std::optional<std::string> Environment::get_nonempty(const std::string& name) const {
  auto value = get(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

}  // namespace kbuild

namespace fs = std::filesystem;

namespace kbuild {

namespace {

// The file /proc/self/exe links to ("" when unreadable), read once: a dry
// run asks for the data dir and the load-check helper, and each reading of
// the link costs a path walk in the kernel.
const fs::path& own_executable() {
  static const fs::path exe = [] {
    std::error_code ec;
    fs::path link = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : link;
  }();
  return exe;
}

}  // namespace

std::string data_dir(const Environment& env) {
  if (auto dir = env.get_nonempty("KBUILD_DATA_DIR")) return *dir;
  // Where this executable sits decides it: looked at once per process.
  static const std::string beside_executable = [] {
    const fs::path& exe = own_executable();
    std::error_code ec;
    if (!exe.empty()) {
      fs::path installed = exe.parent_path().parent_path() / "share" / "kbuild";
      if (fs::is_directory(installed / "devices", ec)) return installed.string();
      // Running from the build tree: use the source tree's configs/ folder.
      if (fs::is_directory(exe.parent_path().parent_path() / "meson-info", ec))
        return std::string(KBUILD_SOURCE_DATA_DIR);
    }
    return std::string(KBUILD_INSTALLED_DATA_DIR);
  }();
  return beside_executable;
}

std::string kbuild_program() {
  constexpr const char* kSelf = "/proc/self/exe";
  std::error_code ec;
  const fs::path exe = fs::read_symlink(kSelf, ec);
  if (!ec && fs::equivalent(exe, kSelf, ec) && !ec) return exe.string();
  return kSelf;
}

std::string installed_kbuild() {
  return std::string(KBUILD_INSTALLED_BIN_DIR) + "/kbuild";
}

std::string observer_library() {
  static const std::string found = [] {
    const fs::path exe_dir = own_executable().parent_path();
    if (exe_dir.empty()) return std::string();
    for (const fs::path& candidate :
         {exe_dir / "libkbuild-observer.so",
          exe_dir.parent_path() / "libexec" / "libkbuild-observer.so",
          fs::path(KBUILD_INSTALLED_LIBEXEC_DIR) / "libkbuild-observer.so"}) {
      const std::string path = candidate.string();
      if (access(path.c_str(), R_OK) == 0)
        return path.find_first_of(" :\t\n") == std::string::npos ? path : std::string();
    }
    return std::string();
  }();
  return found;
}

std::optional<std::string> helper_program(const std::string& name) {
  const fs::path exe_dir = own_executable().parent_path();
  if (exe_dir.empty()) return std::nullopt;
  for (const fs::path& candidate : {exe_dir / name, exe_dir.parent_path() / "libexec" / name,
                                    fs::path(KBUILD_INSTALLED_LIBEXEC_DIR) / name}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

std::string load_check_helper() {
  if (std::optional<std::string> found = helper_program("kbuild-load-check")) return *found;
  throw Error(ErrorKind::internal,
              "kbuild-load-check (the --check-load helper) is missing beside " +
                  own_executable().parent_path().string() + " and in " +
                  KBUILD_INSTALLED_LIBEXEC_DIR + "; reinstall kbuild");
}

}  // namespace kbuild
