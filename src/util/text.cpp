
#include "util/text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kbuild {

size_t utf8_sequence_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length;
  unsigned min_second = 0x80, max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;
    if (lead == 0xED) max_second = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;
    if (lead == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return length;
}

namespace {

// U+0080..U+009F: valid UTF-8, but control characters (U+009B starts a
// terminal escape sequence as ESC [ does).
bool is_c1_control(std::string_view text, size_t i) {
  return static_cast<unsigned char>(text[i]) == 0xC2 &&
         static_cast<unsigned char>(text[i + 1]) < 0xA0;
}

void append_hex(std::string& out, unsigned char c) {
  char hex[5];
  std::snprintf(hex, sizeof hex, "\\x%02x", c);
  out += hex;
}

}  // namespace

std::string printable_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n", ++i;
    } else if (c == '\t') {
      out += "\\t", ++i;
    } else if (c == '\r') {
      out += "\\r", ++i;
    } else if (size_t n = c >= 0x80 ? utf8_sequence_length(text, i) : 0;
               n && !is_c1_control(text, i)) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      append_hex(out, c);
      ++i;
    }
  }
  return out;
}

}  // namespace kbuild

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

namespace {

bool is_scheme_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool is_scheme_char(char c) {
  return is_scheme_letter(c) || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-';
}

// The length of the scheme-like prefix `address` starts with (letters, then
// RFC 3986's scheme characters, a ':' and at most two '/'), 0 for none.
std::size_t scheme_length(std::string_view address) {
  if (address.empty() || !is_scheme_letter(address[0])) return 0;
  std::size_t i = 1;
  while (i < address.size() && is_scheme_char(address[i])) ++i;
  if (i == address.size() || address[i] != ':') return 0;
  ++i;
  for (int slash = 0; slash < 2 && i < address.size() && address[i] == '/'; ++slash) ++i;
  return i;
}

}  // namespace

AddressParts address_parts(std::string_view address) {
  AddressParts parts;
  parts.scheme = address.substr(0, scheme_length(address));
  std::string_view after = address.substr(parts.scheme.size());
  parts.rest = after;
  // unix:///PATH: a socket's path, whose '@' is no userinfo's end.
  if (parts.scheme == "unix://" && !after.empty() && after[0] == '/') return parts;
  const std::size_t at = after.rfind('@');
  if (at == std::string_view::npos) return parts;
  parts.userinfo = after.substr(0, at);
  parts.rest = after.substr(at + 1);
  return parts;
}

std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc() || end != text.data() + i + 3) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

std::string redact_address(std::string_view address) {
  const AddressParts parts = address_parts(address);
  if (!parts.userinfo) return std::string(address);
  std::string shown(parts.scheme);
  shown += "***@";
  shown.append(parts.rest);
  return shown;
}

std::string redact_value(std::string_view value) {
  std::size_t start = 0;
  if (!value.empty() && value[0] == '-') {
    const std::size_t equals = value.find('=');
    if (equals != std::string_view::npos) start = equals + 1;
  }
  const std::string_view address = value.substr(start);
  if (scheme_length(address) == 0 || address.find('@') == std::string_view::npos)
    return redact_urls(value);
  return std::string(value.substr(0, start)) + redact_address(address);
}

bool is_secret_variable(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kMarks{
      "_KEY", "PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "AUTHORIZATION"};
  for (std::string_view mark : kMarks)
    if (name.find(mark) != std::string_view::npos) return true;
  return false;
}

bool is_address_variable(std::string_view name) {
  return name == "KBUILD_REMOTE_CACHE" ||
         (name.size() > 4 && name.substr(name.size() - 4) == "_URL");
}

std::string shown_value(std::string_view name, std::string_view value) {
  if (is_secret_variable(name)) return "set";
  return is_address_variable(name) ? redact_address(value) : redact_value(value);
}

}  // namespace kbuild

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

namespace kbuild {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: Levenshtein plus adjacent transpositions.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates) {
  // One edit per four letters: "npuu" is npu mistyped, "tpu" may be a device of its own.
  const std::size_t allowed = word.size() / 4;
  if (allowed == 0) return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    if (candidate == word) continue;
    std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace kbuild

namespace kbuild {

std::optional<std::uint64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  double scale = unit.empty()  ? 1
                 : unit == "K" ? 1024.0
                 : unit == "M" ? 1024.0 * 1024
                 : unit == "G" ? 1024.0 * 1024 * 1024
                 : unit == "T" ? 1024.0 * 1024 * 1024 * 1024
                               : -1;
  constexpr double kMaxBytes = 1024.0 * 1024 * 1024 * 1024 * 1024;
  if (scale < 0 || !std::isfinite(value) || std::signbit(value) || value * scale > kMaxBytes)
    return std::nullopt;
  return static_cast<std::uint64_t>(value * scale);
}

std::string human_size(std::uint64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace kbuild
