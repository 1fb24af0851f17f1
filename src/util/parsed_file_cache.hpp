// What the caches of parsed files (Inductor profiles, device files) share:
// an entry in <cache root>/discovery/ (a trusted directory) holds the result
// of parsing and validating some files, and answers only while kbuild
// itself and every one of those files keep their identity (device, inode,
// size, mtime, ctime). A missing, foreign, corrupt or stale entry is
// ignored, and only files unchanged for two seconds are remembered. The
// bytes of an entry are written and read with ByteWriter and ByteReader
// (the ISA probe's answers use them too); a parsed file's fields go through
// FieldWriter and FieldReader, which both walk one field list per type.
#pragma once

#include <sys/stat.h>

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/file_system.hpp"
#include "util/trusted_dir.hpp"

namespace kbuild {

// Device, inode, size, mtime and ctime: any change to a file's bytes changes
// one of them (ctime cannot be set back). "" when it cannot be stated (in
// `files`, as stat_files states).
std::string file_identity(const struct stat& st);
std::string file_identity(const FileSystem& files, const std::string& path);

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

// One field list per type, read by both directions: a type's fields are
// listed once, as
//   template <class Archive, FieldsOf<T> Self> auto visit(Archive& a, Self& t) {
//     return a(t.first, t.second, ...);
//   }
// (in namespace kbuild, found by argument-dependent lookup), and FieldWriter
// (Self const) writes them in that order, FieldReader reads them back. A
// value stored as something else says how, both ways, in one call:
// `return a.through(t, to, from)` (`from` returns nullopt for bytes that make
// no sense). listed_fields and aggregate_fields let the codec check that the
// list names every field of the struct.
template <class Self, class T>
concept FieldsOf = std::same_as<std::remove_const_t<Self>, T>;

// How many values an enum stored as a number has (specialize it beside the
// field list that stores one): a larger number read back is a bad entry.
template <class E>
inline constexpr std::uint32_t kEnumValues = 0;

class FieldWriter {
 public:
  template <class... T>
  void operator()(const T&... fields) {
    (put(fields), ...);
  }
  template <class T, class To, class From>
  void through(const T& value, To to, From /*from*/) {
    put(to(value));
  }
  std::string take() { return out_.take(); }

 private:
  void put(const std::string& s) { out_.str(s); }
  void put(bool b) { out_.flag(b); }
  void put(int n) { out_.u32(static_cast<std::uint32_t>(n)); }
  void put(double d) { out_.f64(d); }
  template <class E>
  requires std::is_enum_v<E>
  void put(E e) {
    static_assert(kEnumValues<E> > 0, "say how many values the enum has (kEnumValues)");
    out_.u32(static_cast<std::uint32_t>(e));
  }
  template <class T>
  void put(const std::vector<T>& v) {
    out_.u32(static_cast<std::uint32_t>(v.size()));
    for (const T& item : v) put(item);
  }
  template <class T, std::size_t N>
  void put(const std::array<T, N>& a) {
    for (const T& item : a) put(item);
  }
  template <class K, class V>
  void put(const std::map<K, V>& m) {
    out_.u32(static_cast<std::uint32_t>(m.size()));
    for (const auto& [key, value] : m) put(key), put(value);
  }
  template <class T>
  void put(const std::optional<T>& o) {
    put(o.has_value());
    if (o) put(*o);
  }
  template <class T>
  void put(const std::shared_ptr<const T>& p) {
    put(p != nullptr);
    if (p) put(*p);
  }
  template <class T>
  requires requires(FieldWriter& w, const T& t) { visit(w, t); }
  void put(const T& t) { visit(*this, t); }

  ByteWriter out_;
};

// Reads what FieldWriter wrote into the same types; not ok() once anything
// overran, counted absurdly, or made no sense.
class FieldReader {
 public:
  explicit FieldReader(const std::string& in) : in_(in) {}
  bool ok() const { return in_.ok(); }
  bool at_end() const { return in_.at_end(); }
  template <class... T>
  void operator()(T&... fields) {
    (get(fields), ...);
  }
  template <class T, class To, class From>
  void through(T& value, To /*to*/, From from) {
    std::remove_cvref_t<std::invoke_result_t<To&, const T&>> stored{};
    get(stored);
    if (!in_.ok()) return;
    std::optional<T> back = from(stored);
    if (back)
      value = std::move(*back);
    else
      in_.fail();
  }

 private:
  void get(std::string& s) { s = in_.str(); }
  void get(bool& b) { b = in_.flag(); }
  void get(int& n) { n = static_cast<int>(in_.u32()); }
  void get(double& d) { d = in_.f64(); }
  template <class E>
  requires std::is_enum_v<E>
  void get(E& e) {
    static_assert(kEnumValues<E> > 0, "say how many values the enum has (kEnumValues)");
    const std::uint32_t n = in_.u32();
    if (n >= kEnumValues<E>) in_.fail();
    e = in_.ok() ? static_cast<E>(n) : E{};
  }
  template <class T>
  void get(std::vector<T>& v) {
    v.clear();
    for (std::uint32_t i = in_.count(); i > 0 && in_.ok(); --i) get(v.emplace_back());
  }
  template <class T, std::size_t N>
  void get(std::array<T, N>& a) {
    for (T& item : a) get(item);
  }
  template <class K, class V>
  void get(std::map<K, V>& m) {
    m.clear();
    for (std::uint32_t i = in_.count(); i > 0 && in_.ok(); --i) {
      K key{};
      get(key);
      auto [at, fresh] = m.try_emplace(std::move(key));
      if (!fresh) in_.fail();  // FieldWriter writes each key once
      get(at->second);
    }
  }
  template <class T>
  void get(std::optional<T>& o) {
    o.reset();
    if (in_.flag()) get(o.emplace());
  }
  template <class T>
  void get(std::shared_ptr<const T>& p) {
    p.reset();
    if (!in_.flag()) return;
    auto made = std::make_shared<T>();
    get(*made);
    p = std::move(made);
  }
  template <class T>
  requires requires(FieldReader& r, T& t) { visit(r, t); }
  void get(T& t) { visit(*this, t); }

  ByteReader in_;
};

// Counts the fields a visit() names, at compile time (never called: only the
// type of what it returns is read).
struct FieldCounter {
  template <class... T>
  std::integral_constant<std::size_t, sizeof...(T)> operator()(T&... /*fields*/) {
    return {};
  }
  template <class T, class To, class From>
  std::integral_constant<std::size_t, 1> through(T& /*value*/, To /*to*/, From /*from*/) {
    return {};
  }
};

template <class T>
inline constexpr std::size_t listed_fields =
    decltype(visit(std::declval<FieldCounter&>(), std::declval<T&>()))::value;

namespace detail {
// Converts to anything: T{AnyField x N} compiles for N up to T's field count.
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): declared only, never called
};
template <class T, class... Fields>
constexpr std::size_t count_fields() {
  if constexpr (requires { T{std::declval<Fields>()..., std::declval<AnyField>()}; })
    return count_fields<T, Fields..., AnyField>();
  else
    return sizeof...(Fields);
}
}  // namespace detail

// The number of fields of the aggregate T (no base classes).
template <class T>
inline constexpr std::size_t aggregate_fields = detail::count_fields<T>();

// How a file's stamp is taken now (file_identity(path) unless the caller holds
// the file open and stated it).
using StampOf = std::function<std::string(const std::string& path)>;

// A file as stated once it was parsed.
struct StatedFile {
  std::string path;
  struct stat st;
};
// `paths` stated now; nullopt when one cannot be.
std::optional<std::vector<StatedFile>> stat_files(const FileSystem& files,
                                                  const std::vector<std::string>& paths);

// The cache's directory, when the cache root already exists (a dry run into
// a fresh home creates no cache). An entry is named `kind`-<hash of key>.bin
// and holds kbuild's identity, the key, the files parsed with their stamps,
// and the bytes that the parse came to.
class ParsedFileCache {
 public:
  // Its files are stated in `files` (device files and profiles, read by
  // descriptor for their trust check, are the real file system's).
  static std::optional<ParsedFileCache> open(const std::string& cache_root,
                                             const FileSystem& files = system_file_system());
  const FileSystem& files() const { return *files_; }

  // The bytes stored for `key`; nullopt when there are none, or they are
  // unreadable, malformed, stored for another key or by another kbuild, or
  // when one of their files' stamp (`stamp_of`) changed since.
  std::optional<std::string> read(std::string_view kind, const std::string& key,
                                  const StampOf& stamp_of = nullptr) const;
  // Remembers `bytes`, parsed from `files`, for `key`, when every file is
  // settled (files()' clock; a failure to write only costs speed). Each file's status
  // must be taken after it was read: one changed while it was read is recent.
  void write(std::string_view kind, const std::string& key, const std::vector<StatedFile>& files,
             const std::string& bytes) const;

 private:
  ParsedFileCache(TrustedDir dir, const FileSystem& files) : dir_(std::move(dir)), files_(&files) {}
  TrustedDir dir_;
  const FileSystem* files_;
};

}  // namespace kbuild
