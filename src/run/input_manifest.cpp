
#include "run/input_manifest.hpp"

#include <sys/stat.h>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "util/digest.hpp"
#include "util/file_system.hpp"
#include "util/json.hpp"

namespace kbuild {

FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_size), ns(st.st_mtim)};
}

std::string stamp_text(const std::string& path) {
  FileStamp st = stamp(path);
  return path + ":" + std::to_string(st.size) + ":" + std::to_string(st.mtime_ns);
}

std::optional<nlohmann::json> parse_manifest(const std::string& bytes) {
  return parse_cbor(bytes);
}

std::string to_cbor(const nlohmann::json& j) {
  std::vector<std::uint8_t> bytes = nlohmann::json::to_cbor(j);
  return std::string(bytes.begin(), bytes.end());
}

// File times come from the kernel's coarse clock, as does `started`: a change
// in the very tick the build started is not seen, but the compiler is not yet
// running then (the key is hashed and the compiler started after it).
bool later(const struct timespec& a, const struct timespec& b) {
  return ns(a) > ns(b);
}

// Paths that, if they appeared, would be found before `header`: for each
// search directory the header lies under, the same relative name in every
// directory searched before it. Which directory and name the compiler used
// is not known, so every reading counts, less those whose candidate exists
// now (it existed when the compiler searched, so that reading was not it).
std::vector<std::string> shadowing_candidates(const std::string& header,
                                              const std::vector<std::string>& search) {
  const std::string h = normal_path(header);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < search.size(); ++i) {
    const std::string& dir = search[i];
    if (h.size() <= dir.size() + 1 || h.compare(0, dir.size(), dir) != 0 || h[dir.size()] != '/')
      continue;
    const std::string rel = h.substr(dir.size() + 1);
    for (std::size_t j = 0; j < i; ++j) {
      std::string candidate = search[j] + "/" + rel;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) != 0) out.push_back(std::move(candidate));
    }
  }
  return out;
}

std::vector<std::string> parse_depfile(const std::string& text) {
  std::vector<std::string> paths;
  auto colon = text.find(": ");
  if (colon == std::string::npos) colon = text.find(":\n");
  if (colon == std::string::npos) return paths;
  std::string word;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;  // line continuation
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';  // an escaped blank inside a path
      ++i;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      if (!word.empty()) paths.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) paths.push_back(word);
  return paths;
}

Result<std::string> input_manifest(const std::vector<std::string>& paths,
                                   const struct timespec& started) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const std::string& path : paths) {
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0) return Failure{path + " cannot be read"};
    // Changed once the build had started: what the compiler read may not
    // be what is hashed now.
    if (later(before.st_mtim, started) || later(before.st_ctim, started))
      return Failure{path + " changed during the build"};
    auto bytes = read_whole_file(path);
    if (!bytes) return Failure{path + " cannot be read"};
    inputs.push_back(
        {path, static_cast<std::int64_t>(before.st_size), ns(before.st_mtim), digest_hex(*bytes)});
  }
  return to_cbor(nlohmann::json{{"inputs", inputs}});
}

namespace {

bool input_unchanged(const ManifestInput& input, std::string& path) {
  path.assign(input.path);
  FileStamp now = stamp(path);
  if (now.size == input.size && now.mtime_ns == input.mtime_ns) return true;
  // Touched, or gone: only identical content still counts.
  auto bytes = read_whole_file(path);
  return bytes && digest_hex(*bytes) == input.digest;
}

// Whether paths exist, asking about a directory before what is in it: most
// shadowing candidates lie in directories that do not exist (the source's
// directory + "bits/"...), so one stat answers for all of them.
class ExistenceCheck {
 public:
  bool exists(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0 && !directory_exists(path.substr(0, slash)))
      return false;
    path_.assign(path);
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0;
  }

 private:
  bool directory_exists(std::string_view dir) {
    auto known = dirs_.find(std::string(dir));
    if (known != dirs_.end()) return known->second;
    bool found = exists(dir);  // its parent first, remembered too
    dirs_.emplace(std::string(dir), found);
    return found;
  }
  std::string path_;  // reused: no allocation per path
  std::unordered_map<std::string, bool> dirs_;
};

}  // namespace

bool manifest_holds(const ManifestView& manifest) {
  std::string path;
  for (const ManifestInput& input : manifest.inputs)
    if (!input_unchanged(input, path)) return false;
  ExistenceCheck check;
  for (std::string_view absent : manifest.absent)
    if (check.exists(absent)) return false;  // shadowed now
  for (const ManifestLibrary& lib : manifest.libraries) {
    path.assign(lib.path);
    FileStamp now = stamp(path);
    if (now.size != lib.size || now.mtime_ns != lib.mtime_ns) return false;
  }
  return true;
}

bool inputs_unchanged(const std::string& manifest_bytes) {
  std::optional<ManifestView> manifest = read_manifest(manifest_bytes);
  return manifest && manifest_holds(*manifest);  // a foreign or damaged one: a miss
}

std::optional<std::string> restamped_here(const std::string& bytes) {
  std::optional<ManifestView> view = read_manifest(bytes);
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!view || !manifest || !manifest->contains("inputs")) return std::nullopt;
  ManifestView rest = *view;  // the absent paths and the libraries, as a local hit checks them
  rest.inputs.clear();
  if (!manifest_holds(rest)) return std::nullopt;
  for (nlohmann::json& record : (*manifest)["inputs"]) {
    if (!record.is_array() || record.size() < 4 || !record[0].is_string() || !record[3].is_string())
      return std::nullopt;
    const std::string path = record[0].get<std::string>();
    struct stat before {
    }, after{};
    if (::stat(path.c_str(), &before) != 0) return std::nullopt;
    auto content = read_whole_file(path);
    if (!content || digest_hex(*content) != record[3].get<std::string>()) return std::nullopt;
    // Changed while it was read: its stamp would not be that content's.
    if (::stat(path.c_str(), &after) != 0 || after.st_size != before.st_size ||
        ns(after.st_mtim) != ns(before.st_mtim) || ns(after.st_ctim) != ns(before.st_ctim))
      return std::nullopt;
    record[1] = static_cast<std::int64_t>(after.st_size);
    record[2] = ns(after.st_mtim);
  }
  return to_cbor(*manifest);
}

namespace {

void rebase_path(nlohmann::json& path, const std::string& from, const std::string& to) {
  if (!path.is_string()) return;
  const std::string& p = path.get_ref<const std::string&>();
  if (p.rfind(from, 0) == 0 && (p.size() == from.size() || p[from.size()] == '/'))
    path = to + p.substr(from.size());
}

}  // namespace

std::optional<std::string> rebase_manifest(const std::string& bytes, const std::string& from,
                                           const std::string& to) {
  std::optional<nlohmann::json> manifest = parse_manifest(bytes);
  if (!manifest || !manifest->is_object()) return std::nullopt;
  for (const char* list : {"inputs", "libraries"})
    if (manifest->contains(list) && (*manifest)[list].is_array())
      for (nlohmann::json& record : (*manifest)[list])
        if (record.is_array() && !record.empty()) rebase_path(record[0], from, to);
  if (manifest->contains("absent") && (*manifest)["absent"].is_array())
    for (nlohmann::json& path : (*manifest)["absent"]) rebase_path(path, from, to);
  return to_cbor(*manifest);
}

}  // namespace kbuild

namespace kbuild {

namespace {

enum Major : std::uint8_t {
  kUnsigned = 0,
  kNegative = 1,
  kBytes = 2,
  kText = 3,
  kArray = 4,
  kMap = 5
};

// A definite-length CBOR reader over `in`: every read checks what is left,
// so a truncated or altered manifest fails, never reads past its end.
class Cursor {
 public:
  explicit Cursor(std::string_view in) : in_(in) {}
  bool done() const { return at_ == in_.size(); }

  // An item's major type and argument (indefinite lengths are refused).
  bool head(std::uint8_t& major, std::uint64_t& arg) {
    if (at_ >= in_.size()) return false;
    const auto first = static_cast<std::uint8_t>(in_[at_++]);
    major = first >> 5;
    const std::uint8_t info = first & 0x1f;
    if (info < 24) {
      arg = info;
      return true;
    }
    if (info > 27) return false;
    const std::size_t width = std::size_t(1) << (info - 24);
    if (in_.size() - at_ < width) return false;
    arg = 0;
    for (std::size_t i = 0; i < width; ++i)
      arg = (arg << 8) | static_cast<std::uint8_t>(in_[at_ + i]);
    at_ += width;
    return true;
  }
  bool text(std::string_view& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n) || major != kText || n > in_.size() - at_) return false;
    out = in_.substr(at_, n);
    at_ += n;
    return true;
  }
  bool integer(std::int64_t& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!head(major, n) || (major != kUnsigned && major != kNegative) || n > kMax) return false;
    out = major == kUnsigned ? static_cast<std::int64_t>(n) : -1 - static_cast<std::int64_t>(n);
    return true;
  }
  bool unsigned_integer(std::uint64_t& out) {
    std::uint8_t major = 0;
    return head(major, out) && major == kUnsigned;
  }
  // An array's length; each element takes a byte at least, so a length
  // beyond what is left is damage (and never sizes an allocation).
  bool array(std::uint64_t& n) { return container(kArray, n); }
  bool map(std::uint64_t& n) { return container(kMap, n); }
  // Any one item (with what it holds), at most kMaxJsonDepth deep.
  bool skip(std::size_t depth = 0) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (depth > kMaxJsonDepth || !head(major, n)) return false;
    switch (major) {
      case kBytes:
      case kText:
        if (n > in_.size() - at_) return false;
        at_ += n;
        return true;
      case kArray:
      case kMap:
        if (n > in_.size() - at_) return false;
        for (std::uint64_t i = 0; i < (major == kMap ? 2 * n : n); ++i)
          if (!skip(depth + 1)) return false;
        return true;
      case 6:  // a tag: the item it tags follows
        return skip(depth + 1);
      default:  // numbers and simple values: the head was all of it
        return true;
    }
  }

 private:
  bool container(std::uint8_t want, std::uint64_t& n) {
    std::uint8_t major = 0;
    return head(major, n) && major == want && n <= in_.size() - at_;
  }
  std::string_view in_;
  std::size_t at_ = 0;
};

// [path, size, mtime, ...]: `fields` of them read, the rest skipped.
template <typename Entry>
bool read_stamped(Cursor& c, Entry& e, std::string_view* digest) {
  std::uint64_t n = 0;
  if (!c.array(n) || n < (digest ? 4u : 3u)) return false;
  if (!c.text(e.path) || !c.integer(e.size) || !c.integer(e.mtime_ns)) return false;
  if (digest && !c.text(*digest)) return false;
  for (std::uint64_t i = digest ? 4 : 3; i < n; ++i)
    if (!c.skip()) return false;
  return true;
}

bool read_inputs(Cursor& c, std::vector<ManifestInput>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestInput& e : out)
    if (!read_stamped(c, e, &e.digest)) return false;
  return true;
}

bool read_libraries(Cursor& c, std::vector<ManifestLibrary>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (ManifestLibrary& e : out)
    if (!read_stamped(c, e, nullptr)) return false;
  return true;
}

bool read_paths(Cursor& c, std::vector<std::string_view>& out) {
  std::uint64_t n = 0;
  if (!c.array(n)) return false;
  out.resize(n);
  for (std::string_view& p : out)
    if (!c.text(p)) return false;
  return true;
}

bool read_field(Cursor& c, std::string_view name, ManifestView& m, bool& has_inputs) {
  if (name == "inputs") return has_inputs = read_inputs(c, m.inputs);
  if (name == "absent") return read_paths(c, m.absent);
  if (name == "libraries") return read_libraries(c, m.libraries);
  if (name == "size") {
    std::uint64_t size = 0;
    if (!c.unsigned_integer(size)) return false;
    m.size = size;
    return true;
  }
  if (name == "digest") {
    std::string_view digest;
    if (!c.text(digest)) return false;
    m.digest = digest;
    return true;
  }
  if (name == "compression") {
    std::string_view compression;
    if (!c.text(compression) || compression != "zstd") return false;
    m.compressed = true;
    return true;
  }
  return c.skip();
}

}  // namespace

std::optional<ManifestView> read_manifest(std::string_view cbor) {
  Cursor c(cbor);
  std::uint64_t fields = 0;
  if (!c.map(fields)) return std::nullopt;
  ManifestView m;
  bool has_inputs = false;
  for (std::uint64_t i = 0; i < fields; ++i) {
    std::string_view name;
    if (!c.text(name) || !read_field(c, name, m, has_inputs)) return std::nullopt;
  }
  if (!has_inputs || !c.done()) return std::nullopt;
  return m;
}

}  // namespace kbuild
