#include "run/manifest_view.hpp"

#include <cstring>
#include <limits>

#include "util/json_text.hpp"

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
