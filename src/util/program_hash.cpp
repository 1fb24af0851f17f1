#include "util/program_hash.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "kbuild/signing.hpp"
#include "util/file_system.hpp"

namespace kbuild {

namespace {

std::int64_t ns(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

// Everything that changes when the file's bytes do, as one file name.
std::string identity_name(const std::string& real, const struct stat& st) {
  const std::string id = "kbuild-program-1\n" + real + "\n" + std::to_string(st.st_dev) + " " +
                         std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
                         std::to_string(ns(st.st_mtim)) + " " + std::to_string(ns(st.st_ctim));
  return to_hex(content_hash(id));
}

bool same_identity(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         ns(a.st_mtim) == ns(b.st_mtim) && ns(a.st_ctim) == ns(b.st_ctim);
}

bool is_hash(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<std::string> read_fd(int fd, std::size_t size) {
  std::string bytes(size, '\0');
  std::size_t have = 0;
  while (have < size) {
    ssize_t n = ::pread(fd, bytes.data() + have, size - have, static_cast<off_t>(have));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;  // shrank while read: not the file stat saw
    have += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace

std::optional<std::string> program_hash(const std::string& path, const TrustedDir* cache) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved) return std::nullopt;
  const std::string real = resolved;
  std::free(resolved);
  UniqueFd fd(::open(real.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat before {};
  if (!fd.valid() || ::fstat(fd.get(), &before) != 0 || !S_ISREG(before.st_mode))
    return std::nullopt;
  const std::string name = identity_name(real, before);
  std::optional<TrustedDir> dir;
  if (cache)
    if (Result<TrustedDir> programs = cache->sub("programs", false))
      dir.emplace(std::move(*programs));
  if (dir)
    if (Result<std::string> known = dir->read(name, 128); known && is_hash(*known)) return *known;
  std::optional<std::string> bytes = read_fd(fd.get(), static_cast<std::size_t>(before.st_size));
  if (!bytes) return std::nullopt;
  std::string hash = to_hex(content_hash(*bytes));
  struct stat after {};
  const bool steady = ::fstat(fd.get(), &after) == 0 && same_identity(before, after);
  if (cache && steady && file_system().settled(after)) {
    if (!dir)
      if (Result<TrustedDir> programs = cache->sub("programs", true))
        dir.emplace(std::move(*programs));
    if (dir) (void)dir->write_atomically(name, hash);  // a failure only costs the next build
  }
  return hash;
}

}  // namespace kbuild
