// text: text for people: printable quoting, redacted secrets, shell quoting, did-you-mean, byte
// sizes; the parts the rest of the library uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Messages name user paths, which may hold newlines, control characters or
// bytes that are not UTF-8. Shown raw they would split kbuild's one-line
// errors or garble a terminal, so they are escaped first.
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

// Secrets are never shown: not in a message, -v, a report, doctor or
// --version. One function per kind of value, used wherever one is shown.
namespace kbuild {

// A server's address (redis://, unix://, and any SCHEME://, http(s)://
// included) as kbuild's clients read it: SCHEME://[USERINFO@]REST. The
// userinfo runs to the last '@' (a password may hold a blank, ':', '/' or
// '@'); unix:///PATH has none, its path may hold '@'. An address mistyped
// ("redis:/:PW@HOST", "redis:PW@HOST", ":PW@HOST") has for its scheme what
// looks like one (letters, then ':' and at most two '/'), or none, and the same
// userinfo.
struct AddressParts {
  std::string_view scheme;                   // "redis://", "redis:/", or ""
  std::optional<std::string_view> userinfo;  // between the scheme and the last '@'
  std::string_view rest;                     // after the userinfo's '@' (host, port, path)
};
AddressParts address_parts(std::string_view address);

// A userinfo's user or password with its %XX escapes (a password holding
// '@', ':' or '/') decoded; nullopt for a bad escape.
std::optional<std::string> percent_decoded(std::string_view text);

// An address as it may be shown: its userinfo, whatever it holds, replaced
// by "***" ("redis://***@host:6379", "redis:/***@host:6379"). Every value
// that is an address (a setting, a variable, a device file's) is shown
// through this one function.
std::string redact_address(std::string_view address);

// `text` with the userinfo of every URL in it (SCHEME://USERINFO@HOST, the
// colon forgotten or not) replaced by "***": "redis://***@host:6379". A
// URL in running text ends at a blank or a quote; a value known to be an
// address is shown with redact_address, which reads it whole.
std::string redact_urls(std::string_view text);

// One word or value whose role is not known (an argv word, a variable's
// value): an address when it, or what follows the '=' of an option word
// ("--remote-cache=ADDRESS"), starts with a scheme-like prefix and holds an
// '@' (redact_address, read to the word's end); else redact_urls.
std::string redact_value(std::string_view value);

// Whether a variable's value is a secret shown only as set or unset (the
// remote cache's signing and verify keys, anything named like a password,
// token or key).
bool is_secret_variable(std::string_view name);

// Whether a variable holds an address (KBUILD_REMOTE_CACHE, anything named
// *_URL): shown with redact_address, whatever it looks like.
bool is_address_variable(std::string_view name);

// A variable's value as it may be shown: "set" for a secret, an address
// with its userinfo masked, else redact_value.
std::string shown_value(std::string_view name, std::string_view value);

}  // namespace kbuild

// POSIX shell word quoting and splitting. kbuild never runs a shell; these
// exist so that printed command lines can be pasted into one, and so that
// multi-word entries (passthrough args) split exactly as Inductor's shlex.
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

// "Did you mean": the known word closest to a mistyped one.
namespace kbuild {

// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word`, if it is close enough to be a typo (at
// most one edit per four letters: "npuu" -> npu, but "tpu" has no match);
// ties go to the earlier candidate. Never `word` itself.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);

}  // namespace kbuild

// Sizes as people write and read them: "500M", "4G" <-> bytes.
namespace kbuild {

// "500M", "4G", "1048576" -> bytes (K, M, G, T are powers of 1024), at
// most 1024T; nullopt when malformed or out of range (nan, inf, negative).
std::optional<std::uint64_t> parse_size(const std::string& text);

// 1536 -> "1.5 KiB", 4294967296 -> "4.0 GiB", 512 -> "512 B".
std::string human_size(std::uint64_t bytes);

}  // namespace kbuild
