#include "util/file_system.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "util/file_util.hpp"

namespace kbuild {

namespace {

std::int64_t ns(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

const FileSystem* installed = nullptr;

}  // namespace

bool FileSystem::settled(const struct stat& st) const {
  const std::int64_t at = ns(now()), age = settle_age_.count();
  return at - ns(st.st_mtim) >= age && at - ns(st.st_ctim) >= age;
}

std::optional<struct stat> SystemFileSystem::status(const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

Result<std::string> SystemFileSystem::read(const std::string& path, std::size_t limit) const {
  return read_regular_file_up_to(path, limit);
}

Result<std::vector<std::string>> SystemFileSystem::list(const std::string& path) const {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), ::closedir);
  if (!dir) return Failure{path + ": " + std::strerror(errno)};
  std::vector<std::string> names;
  while (const struct dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> SystemFileSystem::real_path(const std::string& path) const {
  std::unique_ptr<char, void (*)(void*)> resolved(::realpath(path.c_str(), nullptr), std::free);
  if (!resolved) return std::nullopt;
  return std::string(resolved.get());
}

struct timespec SystemFileSystem::now() const {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

const FileSystem& file_system() {
  static const SystemFileSystem system;
  return installed ? *installed : system;
}

ScopedFileSystem::ScopedFileSystem(const FileSystem& fs) : previous_(installed) {
  installed = &fs;
}

ScopedFileSystem::~ScopedFileSystem() {
  installed = previous_;
}

}  // namespace kbuild
