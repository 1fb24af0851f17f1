// "Did you mean": the known word closest to a mistyped one.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kbuild {

// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `word`, if it is close enough to be a typo (at
// most one edit per four letters: "npuu" -> npu, but "tpu" has no match);
// ties go to the earlier candidate. Never `word` itself.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);

}  // namespace kbuild
