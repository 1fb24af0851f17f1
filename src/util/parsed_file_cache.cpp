#include "util/parsed_file_cache.hpp"

#include <cstring>

#include "kbuild_config.h"
#include "util/file_system.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

namespace {

// Bump when an entry's layout, or what a kind's bytes hold, changes.
constexpr const char* kFormat = "kbuild-parsed-file-cache 3";
constexpr std::size_t kMaxParsedBytes = 1u << 20;

std::string files_with_stamps(const FileSystem& fs, const std::vector<std::string>& files,
                              const StampOf& stamp_of) {
  std::string out;
  for (const std::string& f : files)
    out += f + '=' + (stamp_of ? stamp_of(f) : file_identity(fs, f)) + '\n';
  return out;
}

std::string entry_name(std::string_view kind, const std::string& key) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  char hex[17];
  for (int i = 15; i >= 0; --i, h >>= 4) hex[i] = "0123456789abcdef"[h & 15];
  hex[16] = '\0';
  return std::string(kind) + '-' + hex + ".bin";
}

}  // namespace

std::string file_identity(const struct stat& st) {
  return std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) + ':' +
         std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
         std::to_string(st.st_mtim.tv_nsec) + ':' + std::to_string(st.st_ctim.tv_sec) + '.' +
         std::to_string(st.st_ctim.tv_nsec);
}

std::string file_identity(const FileSystem& files, const std::string& path) {
  std::optional<struct stat> st = files.status(path);
  return st ? file_identity(*st) : "";
}

// kbuild's own executable, stated on the real file system even under a
// test's fake one (the identity is taken once, for the whole process).
const std::string& program_identity() {
  static const std::string identity = [] {
    struct stat st {};
    const bool stated = ::stat("/proc/self/exe", &st) == 0;
    return std::string(kFormat) + '\n' + KBUILD_VERSION + '\n' + (stated ? file_identity(st) : "");
  }();
  return identity;
}

void ByteWriter::strings(const std::vector<std::string>& v) {
  u32(static_cast<std::uint32_t>(v.size()));
  for (const std::string& s : v) str(s);
}

void ByteWriter::strings(const std::map<std::string, std::string>& m) {
  u32(static_cast<std::uint32_t>(m.size()));
  for (const auto& [k, v] : m) str(k), str(v);
}

bool ByteReader::take(std::size_t n) {
  if (!ok_ || n > in_.size() - pos_) return ok_ = false;
  pos_ += n;
  return true;
}

std::uint32_t ByteReader::u32() {
  std::uint32_t v = 0;
  if (take(sizeof v)) std::memcpy(&v, in_.data() + pos_ - sizeof v, sizeof v);
  return v;
}

double ByteReader::f64() {
  double v = 0;
  if (take(sizeof v)) std::memcpy(&v, in_.data() + pos_ - sizeof v, sizeof v);
  return v;
}

std::uint32_t ByteReader::count() {
  std::uint32_t n = u32();
  if (n > in_.size() - pos_) ok_ = false;
  return ok_ ? n : 0;
}

std::string ByteReader::str() {
  std::uint32_t n = u32();
  if (!take(n)) return "";
  return in_.substr(pos_ - n, n);
}

bool ByteReader::flag() {
  return take(1) && in_[pos_ - 1] != '\0';
}

std::vector<std::string> ByteReader::string_list() {
  std::vector<std::string> v;
  for (std::uint32_t i = count(); i > 0 && ok_; --i) v.push_back(str());
  return v;
}

std::map<std::string, std::string> ByteReader::string_map() {
  std::map<std::string, std::string> m;
  for (std::uint32_t i = count(); i > 0 && ok_; --i) {
    std::string k = str();
    m[k] = str();
  }
  return m;
}

std::optional<std::vector<StatedFile>> stat_files(const FileSystem& files,
                                                  const std::vector<std::string>& paths) {
  std::vector<StatedFile> stated;
  for (const std::string& path : paths) {
    std::optional<struct stat> st = files.status(path);
    if (!st) return std::nullopt;
    stated.push_back(StatedFile{path, *st});
  }
  return stated;
}

std::optional<ParsedFileCache> ParsedFileCache::open(const std::string& cache_root,
                                                     const FileSystem& files) {
  if (cache_root.empty()) return std::nullopt;
  Result<TrustedDir> sub = open_discovery_dir(cache_root, false);
  if (!sub) return std::nullopt;
  return ParsedFileCache(std::move(*sub), files);
}

// An entry is the bytes of ByteWriter: identity, key, files, their stamps,
// then the payload (not CBOR, as discovery's entries: decoding a large
// binary through nlohmann's CBOR reader cost more than parsing the JSON).
std::optional<std::string> ParsedFileCache::read(std::string_view kind, const std::string& key,
                                                 const StampOf& stamp_of) const {
  Result<std::string> content = dir_.read(entry_name(kind, key), kMaxParsedBytes);
  if (!content) return std::nullopt;
  ByteReader r(*content);
  if (r.str() != program_identity() || r.str() != key) return std::nullopt;
  std::vector<std::string> files = r.string_list();
  // Stale when any of the files changed since it was parsed.
  if (files.empty() || r.str() != files_with_stamps(*files_, files, stamp_of)) return std::nullopt;
  std::string payload = r.str();
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return payload;
}

void ParsedFileCache::write(std::string_view kind, const std::string& key,
                            const std::vector<StatedFile>& files, const std::string& bytes) const {
  ByteWriter w;
  w.str(program_identity());
  w.str(key);
  std::vector<std::string> paths;
  std::string stamps;
  for (const StatedFile& f : files) {
    if (!files_->settled(f.st)) return;
    paths.push_back(f.path);
    stamps += f.path + '=' + file_identity(f.st) + '\n';
  }
  w.strings(paths);
  w.str(stamps);
  w.str(bytes);
  (void)dir_.write_atomically(entry_name(kind, key), w.take());
}

}  // namespace kbuild
