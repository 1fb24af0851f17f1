#include "run/manifest.hpp"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "util/json.hpp"

namespace kbuild {

std::string_view Manifest::keep(std::string text) {
  if (!kept_) kept_ = std::make_shared<std::deque<std::string>>();
  return kept_->emplace_back(std::move(text));  // a deque's elements stay where they are
}

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
// so a truncated or altered manifest fails, never reads past its end. Its
// steps run for every field of a manifest of thousands of paths: inlined,
// even in a build for size.
class Cursor {
 public:
  explicit Cursor(std::string_view in) : in_(in) {}
  bool done() const { return at_ == in_.size(); }
  std::size_t at() const { return at_; }

  // An item's major type and argument (indefinite lengths are refused).
  [[gnu::always_inline]] inline bool head(std::uint8_t& major, std::uint64_t& arg) {
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
    const auto* p = reinterpret_cast<const unsigned char*>(in_.data() + at_);
    auto byte = [p](int i) { return static_cast<std::uint64_t>(p[i]); };
    switch (width) {  // big-endian
      case 1: arg = byte(0); break;
      case 2: arg = byte(0) << 8 | byte(1); break;
      case 4: arg = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3); break;
      default:
        arg = byte(0) << 56 | byte(1) << 48 | byte(2) << 40 | byte(3) << 32 | byte(4) << 24 |
              byte(5) << 16 | byte(6) << 8 | byte(7);
    }
    at_ += width;
    return true;
  }
  // A text (major 3) or byte string (major 2).
  [[gnu::always_inline]] inline bool string(std::uint8_t want, std::string_view& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n) || major != want || n > in_.size() - at_) return false;
    out = std::string_view(in_.data() + at_, n);
    at_ += n;
    return true;
  }
  [[gnu::always_inline]] inline bool text(std::string_view& out) { return string(kText, out); }
  [[gnu::always_inline]] inline bool integer(std::int64_t& out) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!head(major, n) || (major != kUnsigned && major != kNegative) || n > kMax) return false;
    out = major == kUnsigned ? static_cast<std::int64_t>(n) : -1 - static_cast<std::int64_t>(n);
    return true;
  }
  // CBOR's null (simple value 22), taken when it is next.
  [[gnu::always_inline]] inline bool null() {
    if (at_ >= in_.size() || static_cast<std::uint8_t>(in_[at_]) != 0xf6) return false;
    ++at_;
    return true;
  }
  bool unsigned_integer(std::uint64_t& out) {
    std::uint8_t major = 0;
    return head(major, out) && major == kUnsigned;
  }
  // An array's or map's length; each element takes a byte at least, so a
  // length beyond what is left is damage (and never sizes an allocation).
  [[gnu::always_inline]] inline bool container(std::uint8_t want, std::uint64_t& n) {
    std::uint8_t major = 0;
    return head(major, n) && major == want && n <= in_.size() - at_;
  }
  // Any one item (with what it holds), at most kMaxJsonDepth deep. Not
  // recursive: a hit skips lists of thousands of paths.
  bool skip() {
    std::uint64_t left[kMaxJsonDepth + 1];  // items still to skip at each depth
    std::size_t depth = 0;
    left[0] = 1;
    for (;;) {
      while (left[depth] == 0) {
        if (depth == 0) return true;
        --depth;
      }
      --left[depth];
      std::uint8_t major = 0;
      std::uint64_t n = 0;
      if (!head(major, n)) return false;
      switch (major) {
        case kBytes:
        case kText:
          if (n > in_.size() - at_) return false;
          at_ += n;
          break;
        case kArray:
        case kMap:
          if (n > in_.size() - at_ || depth == kMaxJsonDepth) return false;
          left[++depth] = major == kMap ? 2 * n : n;
          break;
        case 6:  // a tag (its number in n): the item it tags follows, one deeper
          if (depth == kMaxJsonDepth) return false;
          left[++depth] = 1;
          break;
        default:  // numbers and simple values: the head was all of it
          break;
      }
    }
  }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
};

// CBOR as the JSON library wrote the manifests of earlier kbuilds, byte for
// byte: every head in its shortest form, definite lengths. Written in two
// passes over the same codecs: a Sizer counts the bytes, then a Writer
// puts them in a string of that size (a store writes a manifest of a few
// MB: no growing, no byte-at-a-time appends).
class Sizer {
 public:
  [[gnu::always_inline]] inline void head(std::uint8_t, std::uint64_t n) {
    size_ += n < 24 ? 1 : n <= 0xff ? 2 : n <= 0xffff ? 3 : n <= 0xffffffffu ? 5 : 9;
  }
  [[gnu::always_inline]] inline void string(std::uint8_t major, std::string_view s) {
    head(major, s.size());
    size_ += s.size();
  }
  [[gnu::always_inline]] inline void integer(std::int64_t v) {
    head(kUnsigned, v >= 0 ? static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(-1 - v));
  }
  [[gnu::always_inline]] inline void null() { ++size_; }
  [[gnu::always_inline]] inline void raw(std::string_view item) { size_ += item.size(); }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = 0;
};

class Writer {
 public:
  explicit Writer(char* at) : at_(at) {}
  [[gnu::always_inline]] inline void head(std::uint8_t major, std::uint64_t n) {
    const auto first = static_cast<unsigned char>(major << 5);
    if (n < 24) {
      *at_++ = static_cast<char>(first | n);
      return;
    }
    const int width = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffu ? 4 : 8;
    const unsigned char info = width == 1 ? 24 : width == 2 ? 25 : width == 4 ? 26 : 27;
    *at_++ = static_cast<char>(first | info);
    for (int i = width - 1; i >= 0; --i) *at_++ = static_cast<char>((n >> (8 * i)) & 0xff);
  }
  [[gnu::always_inline]] inline void string(std::uint8_t major, std::string_view s) {
    head(major, s.size());
    raw(s);
  }
  [[gnu::always_inline]] inline void integer(std::int64_t v) {
    if (v >= 0)
      head(kUnsigned, static_cast<std::uint64_t>(v));
    else
      head(kNegative, static_cast<std::uint64_t>(-1 - v));
  }
  [[gnu::always_inline]] inline void null() { *at_++ = static_cast<char>(0xf6); }
  [[gnu::always_inline]] inline void raw(std::string_view item) {
    if (!item.empty()) std::memcpy(at_, item.data(), item.size());
    at_ += item.size();
  }
  const char* at() const { return at_; }

 private:
  char* at_;
};

// How one value is read and written: each codec below is both.
struct Text {
  using Value = std::string_view;
  [[gnu::always_inline]] static inline bool read(Cursor& c, Value& v) { return c.text(v); }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    w.string(kText, v);
  }
};

struct Bytes {
  using Value = std::string_view;
  static bool read(Cursor& c, Value& v) { return c.string(kBytes, v); }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    w.string(kBytes, v);
  }
};

struct Integer {
  using Value = std::int64_t;
  [[gnu::always_inline]] static inline bool read(Cursor& c, Value& v) { return c.integer(v); }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    w.integer(v);
  }
};

struct Unsigned {
  using Value = std::uint64_t;
  static bool read(Cursor& c, Value& v) { return c.unsigned_integer(v); }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    w.head(kUnsigned, v);
  }
};

// A text, or null for none.
struct TextOrNull {
  using Value = std::optional<std::string_view>;
  [[gnu::always_inline]] static inline bool read(Cursor& c, Value& v) {
    if (c.null()) {
      v.reset();
      return true;
    }
    return c.text(v.emplace());
  }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    if (v)
      w.string(kText, *v);
    else
      w.null();
  }
};

// "compression": "zstd", the only one there is; true when it is.
struct Zstd {
  using Value = bool;
  static bool read(Cursor& c, Value& v) {
    std::string_view name;
    return c.text(name) && (v = name == "zstd");
  }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value&) {
    w.string(kText, "zstd");
  }
};

// One part of a row (one of a list's arrays), by position: its member and codec.
template <class Codec, class Row>
struct Part {
  using Codec_ = Codec;
  typename Codec::Value Row::*member;
};
template <class Codec, class Row>
constexpr Part<Codec, Row> part(typename Codec::Value Row::*member) {
  return {member};
}

// Each row's parts, in the order of its CBOR array.
constexpr auto kInputParts =
    std::tuple{part<Text>(&ManifestInput::path), part<Integer>(&ManifestInput::size),
               part<Integer>(&ManifestInput::mtime_ns), part<Text>(&ManifestInput::digest),
               part<Integer>(&ManifestInput::ctime_ns)};
// An input row of an older kbuild has no ctime_ns.
constexpr std::uint64_t kInputPartsRequired = 4;
constexpr auto kLibraryParts =
    std::tuple{part<Text>(&ManifestLibrary::path), part<Integer>(&ManifestLibrary::size),
               part<Integer>(&ManifestLibrary::mtime_ns)};
constexpr auto kDirParts =
    std::tuple{part<Text>(&ManifestDir::path), part<Integer>(&ManifestDir::mtime_ns),
               part<Integer>(&ManifestDir::ctime_ns)};
constexpr auto kVariableParts =
    std::tuple{part<Text>(&ManifestVariable::name), part<TextOrNull>(&ManifestVariable::value)};
constexpr auto kListingParts =
    std::tuple{part<Text>(&ManifestListing::path), part<Text>(&ManifestListing::digest)};

// How many of its parts a row has: all, but for an input row read from an
// earlier kbuild's entry, which has no ctime.
constexpr std::uint64_t row_parts(const ManifestInput& v, std::uint64_t all,
                                  std::uint64_t required) {
  return v.ctime_ns == kNoCtime ? required : all;
}
template <class R>
constexpr std::uint64_t row_parts(const R&, std::uint64_t all, std::uint64_t) {
  return all;
}

// A row as an array of its parts. An open one may have more (a later
// kbuild's), skipped, and fewer, down to `Required` (an earlier kbuild's:
// the parts it lacks keep their defaults); a closed one has exactly its parts.
template <class R, const auto& Parts, bool Open,
          std::uint64_t Required = std::tuple_size_v<std::decay_t<decltype(Parts)>>>
struct RowOf {
  using Value = R;
  static constexpr std::uint64_t kParts = std::tuple_size_v<std::decay_t<decltype(Parts)>>;
  static_assert(Required <= kParts && (Open || Required == kParts));
  template <std::size_t... I>
  [[gnu::always_inline]] static inline bool read_parts(Cursor& c, Value& v, std::uint64_t n,
                                                       std::index_sequence<I...>) {
    return ((I >= n || std::decay_t<decltype(std::get<I>(Parts))>::Codec_::read(
                           c, v.*(std::get<I>(Parts).member))) &&
            ...);
  }
  [[gnu::always_inline]] static inline bool read(Cursor& c, Value& v) {
    std::uint64_t n = 0;
    if (!c.container(kArray, n) || (Open ? n < Required : n != kParts)) return false;
    if (!read_parts(c, v, n, std::make_index_sequence<kParts>{})) return false;
    for (std::uint64_t i = kParts; i < n; ++i)
      if (!c.skip()) return false;
    return true;
  }
  template <class W, std::size_t... I>
  [[gnu::always_inline]] static inline void write_parts(W& w, const Value& v, std::uint64_t n,
                                                        std::index_sequence<I...>) {
    ((I < n ? std::decay_t<decltype(std::get<I>(Parts))>::Codec_::write(
                  w, v.*(std::get<I>(Parts).member))
            : void()),
     ...);
  }
  // A row an earlier kbuild wrote is written back as it was: without the
  // parts it lacked (row_parts), so its entry keeps its bytes.
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    const std::uint64_t n = row_parts(v, kParts, Required);
    w.head(kArray, n);
    write_parts(w, v, n, std::make_index_sequence<kParts>{});
  }
};

// A list of values of one codec.
template <class Codec>
struct ListOf {
  using Value = std::vector<typename Codec::Value>;
  static bool read(Cursor& c, Value& v) {
    std::uint64_t n = 0;
    if (!c.container(kArray, n)) return false;
    v.resize(n);
    for (typename Codec::Value& e : v)
      if (!Codec::read(c, e)) return false;
    return true;
  }
  template <class W>
  [[gnu::always_inline]] static inline void write(W& w, const Value& v) {
    w.head(kArray, v.size());
    for (const typename Codec::Value& e : v) Codec::write(w, e);
  }
};

enum FieldFlags : unsigned {
  kAlways = 1,    // written even when empty
  kRequired = 2,  // a manifest without it is damaged
};

// A field of the manifest: its name, its member and the member's codec
// (an optional member is written when set, a list when not empty or
// kAlways, a flag when true).
template <class Codec, class Member>
struct Field {
  using Codec_ = Codec;
  std::string_view name;
  Member Manifest::*member;
  unsigned flags = 0;
};
template <class Codec, class Member>
constexpr Field<Codec, Member> field(std::string_view name, Member Manifest::*member,
                                     unsigned flags = 0) {
  return {name, member, flags};
}

// The manifest's fields, in the order they are written: the order earlier
// kbuilds wrote a local entry's (what was observed, then what the build
// added, then what the store added), so its bytes are as they were.
using Absent = ListOf<Text>;
using Dirs = ListOf<RowOf<ManifestDir, kDirParts, false>>;
using Inputs = ListOf<RowOf<ManifestInput, kInputParts, true, kInputPartsRequired>>;
using Listed = ListOf<RowOf<ManifestListing, kListingParts, false>>;
using Variables = ListOf<RowOf<ManifestVariable, kVariableParts, false>>;
using Libraries = ListOf<RowOf<ManifestLibrary, kLibraryParts, true>>;
constexpr auto kFields = std::tuple{
    field<Absent>("absent", &Manifest::absent, kAlways),
    field<Dirs>("dirs", &Manifest::dirs, kAlways),
    field<Inputs>("inputs", &Manifest::inputs, kAlways | kRequired),
    field<Listed>("listed", &Manifest::listed, kAlways),
    field<Variables>("variables", &Manifest::variables, kAlways),
    field<Libraries>("libraries", &Manifest::libraries),
    field<Bytes>("depfile", &Manifest::depfile),
    field<Bytes>("diagnostics", &Manifest::diagnostics),
    field<Zstd>("compression", &Manifest::compressed),
    field<Text>("digest", &Manifest::digest),
    field<Unsigned>("size", &Manifest::size),
    field<Text>("gch", &Manifest::gch),
    field<Text>("remote", &Manifest::remote),
};
constexpr std::size_t kFieldCount = std::tuple_size_v<decltype(kFields)>;
static_assert(kFieldCount <= 32, "fields seen are one bit each");

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_list : std::false_type {};
template <class T>
struct is_list<std::vector<T>> : std::true_type {};

template <class Member>
bool is_set(const Member& m, unsigned flags) {
  if constexpr (is_optional<Member>::value)
    return m.has_value();
  else if constexpr (is_list<Member>::value)
    return (flags & kAlways) || !m.empty();
  else
    return static_cast<bool>(m);
}

// A field's value into its member: an optional set, a list skipped
// without `lists`.
template <class Codec, class Member>
bool read_member(Cursor& c, Member& member, bool lists) {
  if constexpr (is_list<Member>::value)
    return lists ? Codec::read(c, member) : c.skip();
  else if constexpr (is_optional<Member>::value)
    return Codec::read(c, member.emplace());
  else
    return Codec::read(c, member);
}

template <class F>
void for_each_field(F&& f) {
  std::apply([&](const auto&... field) { (f(field), ...); }, kFields);
}

Failure damaged(const std::string& why) {
  return Failure{"the manifest is damaged: " + why};
}

}  // namespace

// What the codec sets that a Manifest keeps to itself.
struct ManifestCodec {
  static void skipped_lists(Manifest& m) { m.lists_skipped_ = true; }
  static bool lists_skipped(const Manifest& m) { return m.lists_skipped_; }
};

Result<Manifest> read_manifest(std::string_view cbor, bool lists) {
  Cursor c(cbor);
  std::uint64_t n = 0;
  if (!c.container(kMap, n)) return damaged("it is not a CBOR map");
  Manifest m;
  if (!lists) ManifestCodec::skipped_lists(m);
  std::uint32_t seen = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::size_t at = c.at();
    std::string_view name;
    if (!c.text(name))
      return damaged("a field's name at byte " + std::to_string(at) + " is not text");
    bool known = false, twice = false, read = true;
    std::uint32_t bit = 1;
    for_each_field([&](const auto& f) {
      if (!known && f.name == name) {
        known = true;
        twice = (seen & bit) != 0;
        seen |= bit;
        using Codec = typename std::decay_t<decltype(f)>::Codec_;
        read = !twice && read_member<Codec>(c, m.*f.member, lists);
      }
      bit <<= 1;
    });
    if (twice) return damaged("it has the field \"" + std::string(name) + "\" twice");
    if (!read)
      return damaged("its field \"" + std::string(name) + "\" at byte " + std::to_string(at) +
                     " does not hold what that field holds");
    if (!known) {
      const std::size_t item_at = c.at();
      if (!c.skip())
        return damaged("its field \"" + std::string(name) + "\" at byte " + std::to_string(at) +
                       " is cut short or too deep");
      m.others.push_back({name, cbor.substr(item_at, c.at() - item_at)});
    }
  }
  std::uint32_t bit = 1;
  std::string missing;
  for_each_field([&](const auto& f) {
    if ((f.flags & kRequired) && !(seen & bit) && missing.empty()) missing = f.name;
    bit <<= 1;
  });
  if (!missing.empty()) return damaged("it has no field \"" + missing + "\"");
  if (!c.done()) return damaged(std::to_string(cbor.size() - c.at()) + " bytes follow its end");
  return m;
}

namespace {

template <class W>
void write_manifest(W& w, const Manifest& m) {
  std::uint64_t fields = m.others.size();
  for_each_field([&](const auto& f) { fields += is_set(m.*f.member, f.flags) ? 1 : 0; });
  w.head(kMap, fields);
  for_each_field([&](const auto& f) {
    if (!is_set(m.*f.member, f.flags)) return;
    using Member = std::remove_cvref_t<decltype(m.*f.member)>;
    using Codec = typename std::decay_t<decltype(f)>::Codec_;
    w.string(kText, f.name);
    if constexpr (is_optional<Member>::value)
      Codec::write(w, *(m.*f.member));
    else
      Codec::write(w, m.*f.member);
  });
  for (const ManifestOtherField& other : m.others) {
    w.string(kText, other.name);
    w.raw(other.item);
  }
}

}  // namespace

std::string manifest_bytes(const Manifest& m) {
  if (ManifestCodec::lists_skipped(m))
    throw std::logic_error("a manifest read without its lists cannot be written");
  Sizer sizer;
  write_manifest(sizer, m);
  std::string out(sizer.size(), '\0');
  Writer writer(out.data());
  write_manifest(writer, m);
  if (writer.at() != out.data() + out.size())
    throw std::logic_error("a manifest's size was counted wrong");
  return out;
}

}  // namespace kbuild
