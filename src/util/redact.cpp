#include "util/redact.hpp"

#include <array>

namespace kbuild {

namespace {

// Where a URL written in a message or an argv word ends.
bool ends_url(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\'' || c == '"' || c == '`' ||
         c == '<' || c == '>';
}

}  // namespace

std::string redact_urls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  for (std::size_t scheme; (scheme = text.find("://", at)) != std::string_view::npos;) {
    const std::size_t start = scheme + 3;
    std::size_t end = start;
    while (end < text.size() && !ends_url(text[end])) ++end;
    // Hosts hold no '@': the last one ends the userinfo, whatever it holds.
    const std::size_t user_end = text.substr(start, end - start).rfind('@');
    out.append(text.substr(at, start - at));
    if (user_end != std::string_view::npos) {
      out += "***";
      out.append(text.substr(start + user_end, end - start - user_end));
    } else {
      out.append(text.substr(start, end - start));
    }
    at = end;
  }
  out.append(text.substr(at));
  return out;
}

bool is_secret_variable(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kMarks{"_KEY",   "PASSWORD", "PASSWD",
                                                          "SECRET", "TOKEN",    "CREDENTIAL"};
  for (std::string_view mark : kMarks)
    if (name.find(mark) != std::string_view::npos) return true;
  return false;
}

std::string shown_value(std::string_view name, std::string_view value) {
  return is_secret_variable(name) ? "set" : redact_urls(value);
}

}  // namespace kbuild
