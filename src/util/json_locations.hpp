// Line/column of every key and value in a JSON text, by JSON pointer, so
// device-file errors can say "npu.json:12:7 at /include_dirs/3".
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kbuild {

struct TextPosition {
  int line = 0;  // 1-based; 0 = unknown
  int column = 0;
};

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

// Parses `text` from file `path`; malformed JSON or a duplicate key becomes
// Error(config) "path:line:column: malformed JSON: ...".
JsonDocument parse_json_file_text(std::string_view text, const std::string& path);

// Escapes a key for a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string json_pointer_token(std::string_view key);

}  // namespace kbuild
