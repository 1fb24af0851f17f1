#include "kbuild/file_util.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/uuid/detail/sha1.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace fs = std::filesystem;

namespace kbuild {

std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
}

std::optional<std::string> read_file_up_to(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char chunk[16384];
  while (text.size() < limit && in.read(chunk, sizeof chunk).gcount() > 0)
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) return std::nullopt;
  if (text.size() > limit) text.resize(limit);
  return text;
}

std::string check_replaceable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";  // absent: created
  if (S_ISDIR(st.st_mode)) return path + " is a directory";
  if (!S_ISREG(st.st_mode))
    return path + " is not a regular file; kbuild replaces only regular files";
  return "";
}

std::string write_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) return "cannot create " + parent.string() + ": " + ec.message();
  static std::mt19937_64 rng{std::random_device{}()};
  std::string tmp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rng() % 100000);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return "cannot write " + tmp;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    return "cannot rename into " + path + ": " + why;
  }
  return "";
}

std::string sha1_hex(const std::string& bytes) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(bytes.data(), bytes.size());
  boost::uuids::detail::sha1::digest_type digest;
  sha.get_digest(digest);
  char hex[41];
  for (int i = 0; i < 5; ++i) std::snprintf(hex + 8 * i, 9, "%08x", digest[i]);
  return std::string(hex, 40);
}

}  // namespace kbuild
