// Messages name user paths, which may hold newlines, control characters or
// bytes that are not UTF-8. Shown raw they would split kbuild's one-line
// errors or garble a terminal, so they are escaped first.
#pragma once

#include <string>
#include <string_view>

namespace kbuild {

// `text` with control characters written as \n, \t, \r or \xNN, and every
// byte that is not part of valid UTF-8 as \xNN; a backslash stays as it is.
// The result is one line of valid UTF-8.
std::string printable_line(std::string_view text);

// Length of the valid UTF-8 sequence starting at text[i], or 0 if invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view text, size_t i);

// "a, b, c": names listed in a message, in the container's order.
template <typename Names>
std::string comma_joined(const Names& names) {
  std::string out;
  for (const auto& n : names) (out += out.empty() ? "" : ", ") += n;
  return out;
}

}  // namespace kbuild
