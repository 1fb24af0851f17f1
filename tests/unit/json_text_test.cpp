#include "util/json.hpp"

#include <catch2/catch.hpp>

using namespace kbuild;

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
