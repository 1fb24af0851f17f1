// JSON text for everything kbuild reads and writes: every input nests at
// most kMaxJsonDepth deep (deeper input is refused before it is parsed, so
// nothing recurses or allocates without bound), and strings are byte
// strings. Paths and arguments need not be UTF-8; in JSON text each byte
// that is not part of valid UTF-8 is written as the escape \udcXX, Python's
// "surrogateescape" convention (json.load, then os.fsencode, gives back the
// exact bytes), and read back to that byte.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace kbuild {

// The deepest nesting of arrays and objects any JSON input may have.
constexpr std::size_t kMaxJsonDepth = 64;

// The byte offset at which `text` first nests deeper than `max_depth`, or
// npos. Linear; strings and their escapes are skipped.
std::size_t json_depth_exceeded_at(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// Parses `text`, refusing nesting deeper than kMaxJsonDepth, and turns each
// \udcXX escape (80 <= XX <= ff) of surrogateescape back into the byte XX.
// Throws JsonSyntaxError (json_locations.hpp) with the position.
nlohmann::json parse_json_text(std::string_view text);
nlohmann::ordered_json parse_ordered_json_text(std::string_view text);

// CBOR bytes (kbuild's own caches keep their records so), refusing nesting
// deeper than kMaxJsonDepth before decoding; nullopt when malformed.
std::optional<nlohmann::json> parse_cbor(std::string_view bytes);

// `bytes` as a JSON string literal, quotes included: valid UTF-8 kept,
// control characters escaped as nlohmann does, each invalid byte as \udcXX.
std::string json_quote(std::string_view bytes);

// The document as JSON text, like nlohmann's dump(indent), except that its
// strings may hold any bytes (written with json_quote, never an exception).
std::string dump_json(const nlohmann::json& doc, int indent = -1);
std::string dump_json(const nlohmann::ordered_json& doc, int indent = -1);

}  // namespace kbuild
