// POSIX shell word quoting and splitting. kbuild never runs a shell; these
// exist so that printed command lines can be pasted into one, and so that
// multi-word entries (passthrough args) split exactly as Inductor's shlex.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbuild {

// Quotes one word so a POSIX shell reads it back unchanged. Words made only
// of safe characters are returned as they are (like Python's shlex.quote).
std::string shell_quote(std::string_view word);
// Joins quoted words with single spaces.
std::string shell_join(const std::vector<std::string>& words);

// Splits like shlex.split (POSIX mode, no comments): blanks separate words,
// single quotes are literal, double quotes honour \\ \" \$ \` and newline,
// a backslash outside quotes escapes the next character. Returns nullopt
// when a quote is not closed or the text ends in a lone backslash.
std::optional<std::vector<std::string>> shell_split(std::string_view text);

}  // namespace kbuild
