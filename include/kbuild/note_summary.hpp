// Notes as a person reads them: entries left out for one reason become one
// line that counts them, instead of one line per entry.
#pragma once

#include <string>
#include <vector>

namespace kbuild {

// `notes` with each run of "left out" notes that share a device and a
// reason folded into one line (ending "; -v lists them"); other notes, and
// a reason met once, as they are. Order: each group where it first appears.
std::vector<std::string> summarise_notes(const std::vector<std::string>& notes);

}  // namespace kbuild
