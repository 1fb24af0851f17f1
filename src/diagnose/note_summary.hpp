// Notes as a person reads them: the entries a device left out become one
// line that counts them, instead of one line per entry.
#pragma once

#include <string>
#include <vector>

namespace kbuild {

// `notes` with the "left out" notes of each device folded into one line
// that counts them and names each distinct reason (ending "; -v lists
// them"), and the libraries left out for want of torch named on one line;
// other notes, and a note with no other of its kind, as they are. Each
// group stands where its first note stood.
std::vector<std::string> summarise_notes(const std::vector<std::string>& notes);

}  // namespace kbuild
