
#include "util/json.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <vector>

#include "kbuild/error.hpp"
#include "util/text.hpp"

namespace kbuild {
namespace {

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The code unit of the \uXXXX escape whose 'u' is at text[i], or -1.
long unicode_escape(std::string_view text, std::size_t i) {
  if (i + 4 >= text.size() || text[i] != 'u') return -1;
  for (std::size_t k = 1; k <= 4; ++k)
    if (!is_hex(text[i + k])) return -1;
  return std::stol(std::string(text.substr(i + 1, 4)), nullptr, 16);
}

// Rewrites what nlohmann cannot read: a lone \udcXX (XX >= 80) becomes
// \u0000 and the two digits XX, and a real \u0000 becomes \u0000\u0000, so
// that after parsing, NUL + two digits is the byte and NUL + NUL is a NUL.
// Returns false (and leaves `out` alone) when `text` has no such escape.
bool mark_surrogate_escapes(std::string_view text, std::string& out) {
  bool found = false, in_string = false;
  long previous_unit = -1;  // the \u escape just before, for surrogate pairs
  std::string rewritten;
  rewritten.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (!in_string) {
      in_string = c == '"';
      rewritten += c;
      continue;
    }
    if (c == '"') {
      in_string = false;
      previous_unit = -1;
    } else if (c == '\\' && i + 1 < text.size()) {
      long unit = unicode_escape(text, i + 1);
      bool after_high = previous_unit >= 0xD800 && previous_unit <= 0xDBFF;
      if (unit >= 0xDC80 && unit <= 0xDCFF && !after_high) {
        rewritten += "\\u0000";
        rewritten += text.substr(i + 4, 2);
        found = true;
        previous_unit = -1;
        i += 5;
        continue;
      }
      previous_unit = unit;
      if (unit == 0) {
        rewritten += "\\u0000\\u0000";
      } else if (unit > 0) {
        rewritten.append(text.substr(i, 6));
      } else {
        rewritten += c;
        rewritten += text[++i];
        continue;
      }
      i += 5;
      continue;
    }
    previous_unit = -1;
    rewritten += c;
  }
  if (found) out = std::move(rewritten);
  return found;
}

// Undoes mark_surrogate_escapes in one string.
std::string unmark(const std::string& s) {
  if (s.find('\0') == std::string::npos) return s;
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool marked = s[i] == '\0' && i + 1 < s.size();
    if (marked && s[i + 1] == '\0') {
      out += '\0';  // an escaped NUL
      ++i;
    } else if (marked && i + 2 < s.size() && is_hex(s[i + 1]) && is_hex(s[i + 2])) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

template <typename Json>
void unmark_all(Json& j) {
  if (j.is_string()) {
    j = unmark(j.template get_ref<const std::string&>());
  } else if (j.is_array()) {
    for (Json& item : j) unmark_all(item);
  } else if (j.is_object()) {
    Json rebuilt = Json::object();
    for (auto& [key, value] : j.items()) {
      unmark_all(value);
      rebuilt[unmark(key)] = std::move(value);
    }
    j = std::move(rebuilt);
  }
}

template <typename Json>
Json parse_limited(std::string_view text) {
  std::size_t deep = json_depth_exceeded_at(text);
  if (deep != std::string_view::npos)
    throw JsonSyntaxError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                          position_of_offset(text, deep));
  std::string marked;
  bool escapes = mark_surrogate_escapes(text, marked);
  std::string_view input = escapes ? std::string_view(marked) : text;
  try {
    Json doc = Json::parse(input.begin(), input.end());
    if (escapes) unmark_all(doc);
    return doc;
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    auto colon = what.find(": ");
    if (colon != std::string::npos && what.find("parse error") < colon)
      what = what.substr(colon + 2);
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    if (auto mistake = comment_or_trailing_comma(input, at)) throw *mistake;
    throw JsonSyntaxError(what, position_of_offset(input, at));
  } catch (const nlohmann::json::exception& e) {  // a number out of range
    throw JsonSyntaxError(e.what(), TextPosition{});
  }
}

template <typename Json>
void dump_into(const Json& j, int indent, int level, std::string& out) {
  const bool pretty = indent >= 0;
  auto newline = [&](int depth) {
    if (pretty) out += '\n' + std::string(static_cast<std::size_t>(indent * depth), ' ');
  };
  if (j.is_string()) {
    out += json_quote(j.template get_ref<const std::string&>());
  } else if (j.is_array() && !j.empty()) {
    out += '[';
    bool first = true;
    for (const Json& item : j) {
      if (!first) out += ',';
      first = false;
      newline(level + 1);
      dump_into(item, indent, level + 1, out);
    }
    newline(level);
    out += ']';
  } else if (j.is_object() && !j.empty()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : j.items()) {
      if (!first) out += ',';
      first = false;
      newline(level + 1);
      out += json_quote(key);
      out += pretty ? ": " : ":";
      dump_into(value, indent, level + 1, out);
    }
    newline(level);
    out += '}';
  } else {
    out += j.dump();  // numbers, booleans, null, [] and {}
  }
}

// The index of the first character of `text` outside JSON strings for which
// `stop(i)` is true (called in order), or npos: the one string-aware scan
// behind the depth limit and the comment and trailing-comma hints.
template <typename Stop>
std::size_t find_outside_strings(std::string_view text, Stop stop) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (stop(i)) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::size_t json_depth_exceeded_at(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  return find_outside_strings(text, [&](std::size_t i) {
    if (text[i] == '[' || text[i] == '{') return ++depth > max_depth;
    if ((text[i] == ']' || text[i] == '}') && depth > 0) --depth;
    return false;
  });
}

nlohmann::json parse_json_text(std::string_view text) {
  return parse_limited<nlohmann::json>(text);
}

nlohmann::ordered_json parse_ordered_json_text(std::string_view text) {
  return parse_limited<nlohmann::ordered_json>(text);
}

std::string json_quote(std::string_view bytes) {
  std::string out = "\"";
  char escape[8];
  for (std::size_t i = 0; i < bytes.size();) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          std::snprintf(escape, sizeof escape, "\\u%04x", c);
          out += escape;
        } else if (c < 0x80) {
          out += static_cast<char>(c);
        } else if (std::size_t n = utf8_sequence_length(bytes, i)) {
          out.append(bytes.substr(i, n));
          i += n;
          continue;
        } else {
          std::snprintf(escape, sizeof escape, "\\udc%02x", c);
          out += escape;
        }
    }
    ++i;
  }
  return out + "\"";
}

std::string dump_json(const nlohmann::json& doc, int indent) {
  std::string out;
  dump_into(doc, indent, 0, out);
  return out;
}

std::string dump_json(const nlohmann::ordered_json& doc, int indent) {
  std::string out;
  dump_into(doc, indent, 0, out);
  return out;
}

namespace {

// CBOR decoding recurses once per nesting level: this pass refuses deep
// input first (it stops at the first level too many).
struct CborDepthLimit : nlohmann::json_sax<nlohmann::json> {
  std::size_t depth = 0;
  std::string why;  // why it stopped
  bool deeper() {
    if (++depth <= kMaxJsonDepth) return true;
    why = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return false;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return deeper(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override { return deeper(); }
  bool end_array() override { return --depth, true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    why = std::string("not CBOR: ") + error.what();
    return false;
  }
};

}  // namespace

Result<nlohmann::json> parse_cbor(std::string_view bytes) {
  CborDepthLimit limit;
  if (!nlohmann::json::sax_parse(bytes.begin(), bytes.end(), &limit,
                                 nlohmann::json::input_format_t::cbor))
    return Failure{limit.why.empty() ? "not CBOR" : limit.why};
  try {
    return nlohmann::json::from_cbor(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    return Failure{std::string("not CBOR: ") + e.what()};
  }
}

}  // namespace kbuild

namespace kbuild {

namespace {

// Moves `pos` over text[from, to).
void advance_position(TextPosition& pos, std::string_view text, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
}

// Reads the text like `const char*`, remembering the furthest byte the
// parser has looked at: at each SAX event that is the end of the token.
struct TrackingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* p = nullptr;
  const char** seen = nullptr;

  reference operator*() const {
    *seen = p;
    return *p;
  }
  TrackingIterator& operator++() {
    ++p;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++p;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p == o.p; }
  bool operator!=(const TrackingIterator& o) const { return p != o.p; }
};

// Builds the document and records positions in one SAX pass.
class LocatingSax {
 public:
  using json = nlohmann::json;
  LocatingSax(std::string_view text, const char** seen, std::map<std::string, TextPosition>& values,
              std::map<std::string, TextPosition>& keys)
      : text_(text), seen_(seen), values_(values), keys_(keys) {}

  json result;
  std::string duplicate_key;
  TextPosition duplicate_at;

  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return value(json(v)); }
  bool string(std::string& v) { return value(json(v)); }
  bool binary(json::binary_t&) { return false; }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    Frame& f = stack_.back();
    if (f.value->contains(k)) {
      duplicate_key = f.pointer + "/" + json_pointer_token(k);
      duplicate_at = here();
      return false;
    }
    f.key = k;
    keys_[f.pointer + "/" + json_pointer_token(k)] = here();
    return true;
  }
  // nlohmann's own message and byte position, kept for the error.
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) {
    error_message = e.what();
    error_byte = byte;
    return false;
  }

  std::string error_message;
  std::size_t error_byte = 0;

 private:
  struct Frame {
    json* value;
    std::string pointer;
    std::string key;
  };

  // Events come in text order, so the position advances from the last one
  // (linear in the text, not quadratic).
  TextPosition here() {
    std::size_t offset = static_cast<std::size_t>(*seen_ - text_.data());
    advance_position(pos_, text_, scanned_, offset);
    scanned_ = std::max(scanned_, std::min(offset, text_.size()));
    return pos_;
  }

  // Places `v` in the current container; returns where it lives.
  std::pair<json*, std::string> place(json v) {
    if (stack_.empty()) {
      result = std::move(v);
      return {&result, ""};
    }
    Frame& f = stack_.back();
    if (f.value->is_array()) {
      std::string ptr = f.pointer + "/" + std::to_string(f.value->size());
      f.value->push_back(std::move(v));
      return {&f.value->back(), ptr};
    }
    std::string ptr = f.pointer + "/" + json_pointer_token(f.key);
    json& slot = (*f.value)[f.key];
    slot = std::move(v);
    return {&slot, ptr};
  }

  bool value(json v) {
    auto [where, ptr] = place(std::move(v));
    values_[ptr] = here();
    return true;
  }
  bool open(json v) {
    auto [where, ptr] = place(std::move(v));
    values_[ptr] = here();
    stack_.push_back(Frame{where, ptr, ""});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  std::string_view text_;
  std::size_t scanned_ = 0;
  TextPosition pos_{1, 1};
  const char** seen_;
  std::map<std::string, TextPosition>& values_;
  std::map<std::string, TextPosition>& keys_;
  std::vector<Frame> stack_;
};

// Where `text` first has a comment or a comma before ']' or '}' (outside
// strings), and which: the two things people write that JSON does not allow.
struct NotJson {
  std::size_t at = std::string_view::npos;
  bool comment = false;
};

NotJson first_not_json(std::string_view text) {
  NotJson found;
  (void)find_outside_strings(text, [&](std::size_t i) {
    if (text[i] == '/') {  // the first slash decides: a comment, or neither
      if (i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*'))
        found = NotJson{i, true};
      return true;
    }
    if (text[i] != ',') return false;
    const std::size_t next = text.find_first_not_of(" \t\r\n", i + 1);
    if (next == std::string_view::npos || (text[next] != ']' && text[next] != '}')) return false;
    found = NotJson{i, false};
    return true;
  });
  return found;
}

}  // namespace

std::optional<JsonSyntaxError> comment_or_trailing_comma(std::string_view text,
                                                         std::size_t failed_at) {
  NotJson found = first_not_json(text);
  if (found.at == std::string_view::npos || found.at > failed_at) return std::nullopt;
  return JsonSyntaxError(found.comment ? "comments are not JSON; remove the comment"
                                       : "trailing comma; remove it (JSON allows no ',' before "
                                         "']' or '}')",
                         position_of_offset(text, found.at));
}

TextPosition position_of_offset(std::string_view text, std::size_t offset) {
  TextPosition pos{1, 1};
  advance_position(pos, text, 0, offset);
  return pos;
}

std::string json_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

JsonDocument JsonDocument::parse(std::string_view text) {
  // Refused before parsing: each level costs a frame and a longer pointer.
  std::size_t deep = json_depth_exceeded_at(text);
  if (deep != std::string_view::npos)
    throw JsonSyntaxError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                          position_of_offset(text, deep));
  JsonDocument doc;
  const char* seen = text.data();
  LocatingSax sax(text, &seen, doc.values_, doc.keys_);
  TrackingIterator first{text.data(), &seen};
  TrackingIterator last{text.data() + text.size(), &seen};
  bool ok = nlohmann::json::sax_parse(first, last, &sax);
  if (!ok) {
    if (!sax.duplicate_key.empty())
      throw JsonSyntaxError("duplicate key '" + sax.duplicate_key + "'", sax.duplicate_at);
    std::string what = sax.error_message;
    // Drop the "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix;
    // the position is reported separately.
    auto colon = what.find(": ");
    if (colon != std::string::npos && what.find("parse error") < colon)
      what = what.substr(colon + 2);
    if (what.empty()) what = "malformed JSON";
    std::size_t at = sax.error_byte > 0 ? sax.error_byte - 1 : 0;
    if (auto mistake = comment_or_trailing_comma(text, at)) throw *mistake;
    throw JsonSyntaxError(what, position_of_offset(text, at));
  }
  doc.root_ = std::move(sax.result);
  return doc;
}

JsonDocument parse_json_file_text(std::string_view text, const std::string& path) {
  try {
    return JsonDocument::parse(text);
  } catch (const JsonSyntaxError& e) {
    throw Error(ErrorKind::config, path + ":" + std::to_string(e.at.line) + ":" +
                                       std::to_string(e.at.column) +
                                       ": malformed JSON: " + e.what());
  }
}

TextPosition JsonDocument::value_position(const std::string& pointer) const {
  auto it = values_.find(pointer);
  return it == values_.end() ? TextPosition{} : it->second;
}

TextPosition JsonDocument::key_position(const std::string& pointer) const {
  auto it = keys_.find(pointer);
  return it == keys_.end() ? value_position(pointer) : it->second;
}

std::string json_location(const std::string& path, TextPosition position,
                          const std::string& pointer) {
  return path + ":" + std::to_string(position.line) + ":" + std::to_string(position.column) +
         ": at " + (pointer.empty() ? "/" : pointer);
}

void JsonFileReader::fail(const std::string& pointer, const std::string& what, bool at_key) const {
  TextPosition p = at_key ? doc_.key_position(pointer) : doc_.value_position(pointer);
  throw Error(ErrorKind::config, json_location(path_, p, pointer) + ": " + what);
}

void JsonFileReader::fail_unknown_key(const std::string& pointer, const std::string& key,
                                      const std::vector<std::string>& candidates,
                                      const std::string& known) const {
  std::optional<std::string> match = closest_match(key, candidates);
  fail(pointer,
       "unknown key '" + key + "'" + (match ? "; did you mean '" + *match + "'?" : "") +
           " (known: " + known + ")",
       true);
}

std::string json_type_name(const nlohmann::json& value) {
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

}  // namespace kbuild
