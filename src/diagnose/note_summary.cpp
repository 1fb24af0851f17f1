#include "diagnose/note_summary.hpp"

#include <algorithm>
#include <map>
#include <regex>

namespace kbuild {

namespace {

// The left-out notes of one device (or one device's libraries without
// torch), and how to say them in one line.
struct Group {
  std::size_t first = 0;             // index of its first note in the output
  std::size_t notes = 0;             // how many it folds
  std::vector<std::string> details;  // distinct reasons, or what each left out ("-ltorch")
  bool counted = false;              // "left out N entries: REASONS" (else "ITEMS left out")
  std::string head, tail;
};

// Compiled on first use, not at start-up (a tenth of a dry run's time).
// device 'npu': left out include_dirs entry "..." (npu.json:5): torch_npu_root is unknown (see ...)
const std::regex& device_entry_note() {
  static const std::regex re(R"(^(device '[^']*'): left out .* entry .*\): (.* is unknown.*)$)");
  return re;
}
// torch not found: -ltorch_npu left out of the npu options
const std::regex& torch_library_note() {
  static const std::regex re(R"(^(torch not found): (\S+) left out of the (.*) options$)");
  return re;
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : separator) + i;
  return out;
}

}  // namespace

std::vector<std::string> summarise_notes(const std::vector<std::string>& notes) {
  std::vector<std::string> out;
  std::map<std::string, Group> groups;
  for (const std::string& note : notes) {
    std::smatch m;
    std::string key, detail;
    bool counted = false;
    std::string head, tail;
    // A prefix first: most notes are no group's, and need no regex compiled.
    if (note.rfind("device '", 0) == 0 && std::regex_match(note, m, device_entry_note())) {
      key = m[1].str();
      detail = m[2].str();
      counted = true;
      head = m[1].str() + ": left out ";
    } else if (note.rfind("torch not found: ", 0) == 0 &&
               std::regex_match(note, m, torch_library_note())) {
      key = m[1].str() + "|" + m[3].str();
      detail = m[2].str();
      head = m[1].str() + ": ";
      tail = " left out of the " + m[3].str() + " options";
    } else {
      out.push_back(note);
      continue;
    }
    auto [it, fresh] = groups.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      g.first = out.size();
      g.counted = counted;
      g.head = head;
      g.tail = tail;
      out.push_back(note);
    }
    ++g.notes;
    if (std::find(g.details.begin(), g.details.end(), detail) == g.details.end())
      g.details.push_back(detail);
  }
  for (const auto& [key, g] : groups) {
    if (g.notes < 2) continue;
    out[g.first] = g.counted ? g.head + std::to_string(g.notes) +
                                   " entries: " + joined(g.details, "; ") + "; -v lists them"
                             : g.head + joined(g.details, " ") + g.tail;
  }
  return out;
}

}  // namespace kbuild
