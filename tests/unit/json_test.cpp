// JsonDocument: the document and the line:column of every key and value by
// JSON pointer; duplicate keys and bad syntax rejected with a position.
#include <catch2/catch.hpp>

#include "kbuild/error.hpp"
#include "util/json.hpp"

using namespace kbuild;

namespace {

bool at(TextPosition p, int line, int column) {
  return p.line == line && p.column == column;
}

JsonSyntaxError syntax_error(std::string_view text) {
  try {
    (void)JsonDocument::parse(text);
  } catch (const JsonSyntaxError& e) {
    return e;
  }
  FAIL("expected a syntax error for " << text);
  return JsonSyntaxError("", {});
}

// Line 2: `  "a": "xy",`   line 3: `  "b": [1, true],`   line 4: `  "c/d~": {"e": null}`
const char* kText = "{\n  \"a\": \"xy\",\n  \"b\": [1, true],\n  \"c/d~\": {\"e\": null}\n}";

}  // namespace

TEST_CASE("position_of_offset counts lines and columns from 1", "[unit][json_locations]") {
  CHECK(at(position_of_offset("ab\ncd", 0), 1, 1));
  CHECK(at(position_of_offset("ab\ncd", 2), 1, 3));
  CHECK(at(position_of_offset("ab\ncd", 3), 2, 1));
  CHECK(at(position_of_offset("ab\ncd", 4), 2, 2));
  CHECK(at(position_of_offset("ab\ncd", 99), 2, 3));  // past the end: the end
  CHECK(at(position_of_offset("", 0), 1, 1));
}

TEST_CASE("json_pointer_token escapes ~ before /", "[unit][json_locations]") {
  CHECK(json_pointer_token("plain") == "plain");
  CHECK(json_pointer_token("a/b~c") == "a~1b~0c");
  CHECK(json_pointer_token("~1") == "~01");
  CHECK(json_pointer_token("") == "");
}

TEST_CASE("keys and values are found where their token ends", "[unit][json_locations]") {
  JsonDocument doc = JsonDocument::parse(kText);
  CHECK(doc.root()["a"] == "xy");
  CHECK(doc.root()["b"][1] == true);
  CHECK(doc.root()["c/d~"]["e"].is_null());
  CHECK(at(doc.value_position(""), 1, 1));
  CHECK(at(doc.key_position("/a"), 2, 5));     // the key's closing quote
  CHECK(at(doc.value_position("/a"), 2, 11));  // the value's closing quote
  CHECK(at(doc.value_position("/b"), 3, 8));   // the array's [
  CHECK(doc.value_position("/b/0").line == 3);
  CHECK(at(doc.value_position("/b/1"), 3, 15));  // the e of true
  CHECK(at(doc.key_position("/c~1d~0"), 4, 8));
  CHECK(at(doc.value_position("/c~1d~0"), 4, 11));  // the object's {
  CHECK(at(doc.key_position("/c~1d~0/e"), 4, 14));
  CHECK(at(doc.value_position("/c~1d~0/e"), 4, 20));  // the last l of null
}

TEST_CASE("an unknown pointer has no position; an element's key is its value",
          "[unit][json_locations]") {
  JsonDocument doc = JsonDocument::parse(kText);
  CHECK(at(doc.value_position("/missing"), 0, 0));
  CHECK(at(doc.key_position("/missing"), 0, 0));
  CHECK(at(doc.value_position("/c/d~"), 0, 0));  // unescaped: not the key
  CHECK(at(doc.key_position("/b/1"), 3, 15));
}

TEST_CASE("a duplicate key is an error at the second one, naming its pointer",
          "[unit][json_locations]") {
  JsonSyntaxError top = syntax_error("{\"a\": 1,\n \"a\": 2}");
  CHECK(std::string(top.what()) == "duplicate key '/a'");
  CHECK(at(top.at, 2, 4));
  JsonSyntaxError nested = syntax_error("{\"x\": [{\"k/\": 1, \"k/\": 2}]}");
  CHECK(std::string(nested.what()) == "duplicate key '/x/0/k~1'");
  // The same key in two objects is no duplicate.
  CHECK_NOTHROW(JsonDocument::parse("{\"x\": {\"a\": 1}, \"y\": {\"a\": 1}}"));
}

TEST_CASE("malformed JSON: nlohmann's message without its prefix, and where",
          "[unit][json_locations]") {
  JsonSyntaxError missing_comma = syntax_error("{\n  \"a\": 1\n  \"b\": 2\n}");
  CHECK(missing_comma.at.line == 3);
  CHECK(std::string(missing_comma.what()).find("[json.exception") == std::string::npos);
  CHECK(std::string(missing_comma.what()).find("parse error") == std::string::npos);
  JsonSyntaxError empty = syntax_error("");
  CHECK(at(empty.at, 1, 1));
  CHECK_FALSE(std::string(empty.what()).empty());
  CHECK(syntax_error("{} extra").at.line == 1);
  CHECK(syntax_error("[1,]").at.line == 1);
}

TEST_CASE("nesting deeper than the limit is refused before parsing", "[unit][json_locations]") {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  CHECK_NOTHROW(JsonDocument::parse(ok));
  const std::string deep =
      "\n" + std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  JsonSyntaxError e = syntax_error(deep);
  CHECK(std::string(e.what()) == "nested deeper than 64 levels");
  CHECK(e.at.line == 2);
}

TEST_CASE("parse_json_file_text: Error(config) as path:line:column: malformed JSON",
          "[unit][json_locations]") {
  try {
    (void)parse_json_file_text("{\n\"a\": 1,\n\"a\": 2}", "/cfg/x.json");
    FAIL("accepted a duplicate key");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::config);
    CHECK(std::string(e.what()) == "/cfg/x.json:3:3: malformed JSON: duplicate key '/a'");
  }
  CHECK(parse_json_file_text("{\"a\": [1]}", "x.json").root()["a"][0] == 1);
}

TEST_CASE("a trailing comma is said to be one, at the comma, not at the bracket after it",
          "[unit][json_locations]") {
  JsonSyntaxError object = syntax_error("{\n  \"a\": 1,\n\n}");
  CHECK(std::string(object.what()).rfind("trailing comma; remove it", 0) == 0);
  CHECK(at(object.at, 2, 9));
  JsonSyntaxError array = syntax_error("[1, 2 ,\n   ]");
  CHECK(std::string(array.what()).rfind("trailing comma", 0) == 0);
  CHECK(at(array.at, 1, 7));
  // Commas and brackets inside strings are text.
  CHECK(std::string(syntax_error("{\"a\": \",}\", \"b\": 1 2}").what()).find("trailing comma") ==
        std::string::npos);
  // A trailing comma after the error the parser stopped on is not blamed.
  CHECK(std::string(syntax_error("{\"a\" 1, \"b\": [2,]}").what()).find("trailing comma") ==
        std::string::npos);
}

TEST_CASE("a comment is said to be one, where it starts", "[unit][json_locations]") {
  JsonSyntaxError line = syntax_error("{\n  \"a\": 1, // one\n  \"b\": 2\n}");
  CHECK(std::string(line.what()) == "comments are not JSON; remove the comment");
  CHECK(at(line.at, 2, 11));
  JsonSyntaxError block = syntax_error("/* the file */ {}");
  CHECK(std::string(block.what()) == "comments are not JSON; remove the comment");
  CHECK(at(block.at, 1, 1));
  // "//" in a string is text: a URL parses.
  CHECK(JsonDocument::parse("{\"url\": \"http://x/*y*/\"}").root()["url"] == "http://x/*y*/");
  CHECK(std::string(syntax_error("[1 / 2]").what()).find("comment") == std::string::npos);
}

TEST_CASE("bytes that are not UTF-8 are written as \\udcXX and read back as those bytes",
          "[unit][json-text]") {
  const std::string weird = std::string("a\xff") + "b\xc3\xa9\x80" + '\0' + "00\"\\\n\x01";
  std::string literal = json_quote(weird);
  CHECK(literal == "\"a\\udcffb\xc3\xa9\\udc80\\u000000\\\"\\\\\\n\\u0001\"");
  nlohmann::json doc = {{weird, {weird, 1, nullptr}}};
  std::string text = dump_json(doc, 2);
  nlohmann::json back = parse_json_text(text);
  CHECK(back == doc);
  // Valid UTF-8 is written as nlohmann writes it, byte for byte.
  nlohmann::ordered_json plain = {{"b", {1, 2.5, "x\ty"}},
                                  {"a", nlohmann::ordered_json::object()},
                                  {"c", nlohmann::ordered_json::array()}};
  CHECK(dump_json(plain, 2) == plain.dump(2));
  CHECK(dump_json(plain) == plain.dump());
}

TEST_CASE("surrogate pairs and escaped backslashes are left to the parser", "[unit][json-text]") {
  CHECK(parse_json_text(R"(["\ud83d\ude00"])")[0] == "\xf0\x9f\x98\x80");
  CHECK(parse_json_text(R"(["\ud800\udc80"])")[0] == "\xf0\x90\x82\x80");  // U+10080
  CHECK(parse_json_text(R"(["\\udcff", "\udcff"])") == nlohmann::json::array({"\\udcff", "\xff"}));
  CHECK(parse_json_text(R"({"\udcfe": "\u0000ff"})") ==
        nlohmann::json{{"\xfe", std::string("\0ff", 3)}});
}

TEST_CASE("JSON nested deeper than the limit is refused before parsing", "[unit][json-text]") {
  std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  CHECK_NOTHROW(parse_json_text(ok));
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(json_depth_exceeded_at(deep) == kMaxJsonDepth);
  CHECK_THROWS_AS(parse_json_text(deep), JsonSyntaxError);
  CHECK_THROWS_AS(JsonDocument::parse(deep), JsonSyntaxError);
  // Brackets inside strings do not count.
  CHECK(json_depth_exceeded_at("[\"" + std::string(1000, '[') + "\\\"\"]") == std::string::npos);
}

TEST_CASE("a trailing comma or a comment is said to be one, where it is", "[unit][json-text]") {
  try {
    (void)parse_json_text("{\"libraries\": [\"a\",\n]}");
    FAIL("a trailing comma parsed");
  } catch (const JsonSyntaxError& e) {
    CHECK(std::string(e.what()).rfind("trailing comma", 0) == 0);
    CHECK(e.at.line == 1);
    CHECK(e.at.column == 19);
  }
  try {
    (void)parse_json_text("{\n# no\n\"a\": 1}");
    FAIL("a '#' parsed");
  } catch (const JsonSyntaxError& e) {
    CHECK(std::string(e.what()).find("comment") == std::string::npos);  // not a JSON comment
  }
  CHECK_THROWS_WITH(parse_json_text("{} // done"), "comments are not JSON; remove the comment");
}

TEST_CASE("parse_cbor: a value, or what is wrong with the bytes", "[unit][json]") {
  const std::vector<std::uint8_t> record = nlohmann::json::to_cbor(nlohmann::json{{"key", 1}});
  Result<nlohmann::json> read = parse_cbor(std::string(record.begin(), record.end()));
  REQUIRE(read);
  CHECK((*read)["key"] == 1);
  Result<nlohmann::json> torn = parse_cbor(std::string(record.begin(), record.end() - 1));
  REQUIRE_FALSE(torn);
  CHECK(torn.why().rfind("not CBOR: ", 0) == 0);
  // 0x81 opens an array of one: kMaxJsonDepth + 1 of them nest too deep.
  Result<nlohmann::json> deep = parse_cbor(std::string(kMaxJsonDepth + 1, '\x81') + '\x01');
  REQUIRE_FALSE(deep);
  CHECK(deep.why() == "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
}
