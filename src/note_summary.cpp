#include "kbuild/note_summary.hpp"

#include <map>
#include <regex>

namespace kbuild {

namespace {

// What a group of left-out notes shares, and how to say the group in one line.
struct Group {
  std::size_t first = 0;  // index of its first note in the output
  std::vector<std::string> notes;
  std::vector<std::string> items;  // what each note left out ("-ltorch")
  std::string summary_prefix, summary_suffix;
};

// device 'npu': left out include_dirs entry "..." (npu.json:5): torch_npu_root is unknown (see ...)
const std::regex kDeviceEntry(R"(^(device '[^']*'): left out .* entry .*\): (.* is unknown.*)$)");
// torch not found: -ltorch_npu left out of the npu options
const std::regex kTorchLibrary(R"(^(torch not found): (\S+) left out of the (.*) options$)");

}  // namespace

std::vector<std::string> summarise_notes(const std::vector<std::string>& notes) {
  std::vector<std::string> out;
  std::map<std::string, Group> groups;
  std::vector<std::string> order;
  for (const std::string& note : notes) {
    std::smatch m;
    std::string key, item, prefix, suffix;
    if (std::regex_match(note, m, kDeviceEntry)) {
      key = m[1].str() + "|" + m[2].str();
      prefix = m[1].str() + ": left out ";
      suffix = " entries: " + m[2].str() + "; -v lists them";
    } else if (std::regex_match(note, m, kTorchLibrary)) {
      key = m[1].str() + "|" + m[3].str();
      item = m[2].str();
      prefix = m[1].str() + ": ";
      suffix = " left out of the " + m[3].str() + " options";
    } else {
      out.push_back(note);
      continue;
    }
    auto [it, fresh] = groups.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      g.first = out.size();
      g.summary_prefix = prefix;
      g.summary_suffix = suffix;
      out.push_back(note);
      order.push_back(key);
    }
    g.notes.push_back(note);
    if (!item.empty()) g.items.push_back(item);
  }
  for (const std::string& key : order) {
    const Group& g = groups[key];
    if (g.notes.size() < 2) continue;
    std::string what;
    if (g.items.empty()) {
      what = std::to_string(g.notes.size());
    } else {
      for (const std::string& i : g.items) what += (what.empty() ? "" : " ") + i;
    }
    out[g.first] = g.summary_prefix + what + g.summary_suffix;
  }
  return out;
}

}  // namespace kbuild
