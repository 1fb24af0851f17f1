// Secrets are never shown: not in a message, -v, a report, doctor or
// --version. One function per kind of value, used wherever one is shown.
#pragma once

#include <string>
#include <string_view>

namespace kbuild {

// `text` with the userinfo of every URL in it (SCHEME://USERINFO@HOST, the
// colon forgotten or not) replaced by "***": "redis://***@host:6379".
std::string redact_urls(std::string_view text);

// Whether a variable's value is a secret shown only as set or unset (the
// remote cache's signing and verify keys, anything named like a password,
// token or key).
bool is_secret_variable(std::string_view name);

// A variable's value as it may be shown: "set" for a secret, else the
// value with its URLs' userinfo masked.
std::string shown_value(std::string_view name, std::string_view value);

}  // namespace kbuild
