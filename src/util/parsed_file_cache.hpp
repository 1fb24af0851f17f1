// What the caches of parsed files (Inductor profiles, device files) share:
// an entry in <cache root>/discovery/ (a trusted directory) holds the result
// of parsing and validating some files, and answers only while kbuild
// itself and every one of those files keep their identity (device, inode,
// size, mtime, ctime). A missing, foreign, corrupt or stale entry is
// ignored, and only files unchanged for two seconds are remembered. The
// bytes of an entry are written and read with ByteWriter and ByteReader
// (the ISA probe's answers use them too).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/trusted_dir.hpp"

namespace kbuild {

// Device, inode, size, mtime and ctime: any change to a file's bytes changes
// one of them (ctime cannot be set back). "" when it cannot be stated.
std::string file_identity(const struct stat& st);
std::string file_identity(const std::string& path);

// kbuild itself (format, version, its executable's stamp): another build of
// it may parse files differently.
const std::string& program_identity();

class ByteWriter {
 public:
  void u32(std::uint32_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f64(double v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    out_ += s;
  }
  void flag(bool b) { out_ += b ? '\1' : '\0'; }
  void strings(const std::vector<std::string>& v);
  void strings(const std::map<std::string, std::string>& m);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what ByteWriter wrote; any overrun or absurd count makes it not ok()
// (and every later read returns nothing).
class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }
  // Marks the bytes bad (a value that decodes but makes no sense).
  void fail() { ok_ = false; }
  std::uint32_t u32();
  double f64();
  // A count of items that follow, each at least a byte long.
  std::uint32_t count();
  std::string str();
  bool flag();
  std::vector<std::string> string_list();
  std::map<std::string, std::string> string_map();

 private:
  bool take(std::size_t n);
  const std::string& in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// How a file's stamp is taken now (file_identity(path) unless the caller holds
// the file open and stated it).
using StampOf = std::function<std::string(const std::string& path)>;

// A file as stated once it was parsed.
struct StatedFile {
  std::string path;
  struct stat st;
};
// `paths` stated now; nullopt when one cannot be.
std::optional<std::vector<StatedFile>> stat_files(const std::vector<std::string>& paths);

// The cache's directory, when the cache root already exists (a dry run into
// a fresh home creates no cache). An entry is named `kind`-<hash of key>.bin
// and holds kbuild's identity, the key, the files parsed with their stamps,
// and the bytes that the parse came to.
class ParsedFileCache {
 public:
  static std::optional<ParsedFileCache> open(const std::string& cache_root);

  // The bytes stored for `key`; nullopt when there are none, or they are
  // unreadable, malformed, stored for another key or by another kbuild, or
  // when one of their files' stamp (`stamp_of`) changed since.
  std::optional<std::string> read(std::string_view kind, const std::string& key,
                                  const StampOf& stamp_of = nullptr) const;
  // Remembers `bytes`, parsed from `files`, for `key`, when every file is
  // settled (file_clock(); a failure to write only costs speed). Each file's status must
  // be taken after it was read: one changed while it was read is recent.
  void write(std::string_view kind, const std::string& key, const std::vector<StatedFile>& files,
             const std::string& bytes) const;

 private:
  explicit ParsedFileCache(TrustedDir dir) : dir_(std::move(dir)) {}
  TrustedDir dir_;
};

}  // namespace kbuild
