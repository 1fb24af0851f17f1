#include "util/json_locations.hpp"

#include <algorithm>
#include <iterator>
#include <vector>

#include "kbuild/error.hpp"
#include "util/json_text.hpp"
#include "util/suggest.hpp"

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
    } else if (c == '/') {
      const bool comment = i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*');
      return comment ? NotJson{i, true} : NotJson{};
    } else if (c == ',') {
      std::size_t next = text.find_first_not_of(" \t\r\n", i + 1);
      if (next != std::string_view::npos && (text[next] == ']' || text[next] == '}'))
        return NotJson{i, false};
    }
  }
  return NotJson{};
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
