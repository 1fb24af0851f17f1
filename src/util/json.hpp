// json: JSON as users write it: parsed with file:line:column for every value, and printed; the
// parts the rest of the library uses.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/error.hpp"

// JSON text for everything kbuild reads and writes: every input nests at
// most kMaxJsonDepth deep (deeper input is refused before it is parsed, so
// nothing recurses or allocates without bound), and strings are byte
// strings. Paths and arguments need not be UTF-8; in JSON text each byte
// that is not part of valid UTF-8 is written as the escape \udcXX, Python's
// "surrogateescape" convention (json.load, then os.fsencode, gives back the
// exact bytes), and read back to that byte.
namespace kbuild {

// The deepest nesting of arrays and objects any JSON input may have.
constexpr std::size_t kMaxJsonDepth = 64;

// The byte offset at which `text` first nests deeper than `max_depth`, or
// npos. Linear; strings and their escapes are skipped.
std::size_t json_depth_exceeded_at(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// Parses `text`, refusing nesting deeper than kMaxJsonDepth, and turns each
// \udcXX escape (80 <= XX <= ff) of surrogateescape back into the byte XX.
// Throws JsonSyntaxError (below) with the position.
nlohmann::json parse_json_text(std::string_view text);
nlohmann::ordered_json parse_ordered_json_text(std::string_view text);

// CBOR bytes (kbuild's own caches keep their entries so), refusing nesting
// deeper than kMaxJsonDepth before decoding; a failure says what is wrong
// (not CBOR, where; nested too deep).
Result<nlohmann::json> parse_cbor(std::string_view bytes);

// `bytes` as a JSON string literal, quotes included: valid UTF-8 kept,
// control characters escaped as nlohmann does, each invalid byte as \udcXX.
std::string json_quote(std::string_view bytes);

// The document as JSON text, like nlohmann's dump(indent), except that its
// strings may hold any bytes (written with json_quote, never an exception).
std::string dump_json(const nlohmann::json& doc, int indent = -1);
std::string dump_json(const nlohmann::ordered_json& doc, int indent = -1);

}  // namespace kbuild

// Line/column of every key and value in a JSON text, by JSON pointer, so
// device-file errors can say "npu.json:12:7 at /include_dirs/3".
namespace kbuild {

struct TextPosition {
  int line = 0;  // 1-based; 0 = unknown
  int column = 0;
};

// Where an error in a JSON file points: "path:line:column: at /pointer"
// (the whole document: "/").
std::string json_location(const std::string& path, TextPosition position,
                          const std::string& pointer);
TextPosition position_of_offset(std::string_view text, std::size_t offset);

class JsonDocument {
 public:
  // Parses `text`. Throws JsonSyntaxError on malformed JSON or duplicate keys.
  static JsonDocument parse(std::string_view text);

  const nlohmann::json& root() const { return root_; }
  // Where the value at `pointer` ends / where the key naming it ends.
  TextPosition value_position(const std::string& pointer) const;
  TextPosition key_position(const std::string& pointer) const;

 private:
  nlohmann::json root_;
  std::map<std::string, TextPosition> values_;
  std::map<std::string, TextPosition> keys_;
};

struct JsonSyntaxError : std::runtime_error {
  JsonSyntaxError(const std::string& what, TextPosition at) : std::runtime_error(what), at(at) {}
  TextPosition at;
};

// When the parse of `text` failed at byte `failed_at` because of a comment
// or a trailing comma at or before it, that error, at the comment or the
// comma (a trailing comma is only found at the bracket after it).
std::optional<JsonSyntaxError> comment_or_trailing_comma(std::string_view text,
                                                         std::size_t failed_at);

// Parses `text` from file `path`; malformed JSON or a duplicate key becomes
// Error(config) "path:line:column: malformed JSON: ...".
JsonDocument parse_json_file_text(std::string_view text, const std::string& path);

// What the readers of kbuild's JSON files (device files, profiles, plugin
// sections) share: errors as "path:line:column: at /pointer: what"
// (Error(config)), and the line of a value for provenance.
class JsonFileReader {
 public:
  JsonFileReader(const JsonDocument& doc, std::string path) : doc_(doc), path_(std::move(path)) {}

  // At the key naming `pointer` when `at_key`, else at its value.
  [[noreturn]] void fail(const std::string& pointer, const std::string& what,
                         bool at_key = false) const;
  int line(const std::string& pointer) const { return doc_.value_position(pointer).line; }
  // "unknown key 'librarys'; did you mean 'libraries'? (known: ...)", at
  // the key `pointer` names; `known` is what the message lists, `candidates`
  // the keys a typo is matched against.
  [[noreturn]] void fail_unknown_key(const std::string& pointer, const std::string& key,
                                     const std::vector<std::string>& candidates,
                                     const std::string& known) const;

 protected:
  const JsonDocument& doc_;
  std::string path_;
};

// "a string", "an object", ... for messages.
std::string json_type_name(const nlohmann::json& value);

// Escapes a key for a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string json_pointer_token(std::string_view key);

}  // namespace kbuild
