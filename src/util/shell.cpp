#include "util/shell.hpp"

namespace kbuild {

namespace {

bool is_safe(char c) {
  // The same safe set as Python's shlex.quote.
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '@' ||
         c == '%' || c == '+' || c == '=' || c == ':' || c == ',' || c == '.' || c == '/' ||
         c == '-' || c == '_';
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

std::string shell_quote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) safe = safe && is_safe(c);
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\"'\"'";
    else
      out += c;
  }
  out += '\'';
  return out;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

std::optional<std::vector<std::string>> shell_split(std::string_view text) {
  std::vector<std::string> words;
  std::string current;
  bool in_word = false;
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (is_blank(c)) {
      if (in_word) words.push_back(std::move(current));
      current.clear();
      in_word = false;
      ++i;
    } else if (c == '\'') {
      in_word = true;
      auto end = text.find('\'', i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      current.append(text.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (c == '"') {
      in_word = true;
      ++i;
      bool closed = false;
      while (i < text.size()) {
        char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < text.size()) {
          char n = text[i + 1];
          if (n == '\\' || n == '"' || n == '$' || n == '`') {
            current += n;
            i += 2;
            continue;
          }
          if (n == '\n') {
            i += 2;
            continue;
          }
        }
        current += d;
        ++i;
      }
      if (!closed) return std::nullopt;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return std::nullopt;
      in_word = true;
      if (text[i + 1] != '\n') current += text[i + 1];
      i += 2;
    } else {
      in_word = true;
      current += c;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(current));
  return words;
}

}  // namespace kbuild
