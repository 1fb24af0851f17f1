#include "devices/device_file_lint.hpp"

#include <algorithm>
#include <sstream>

namespace kbuild {

namespace {

void check_block(const DeviceFile& file, const ListBlock& block, std::vector<std::string>& out) {
  for (OptionList list : {OptionList::cflags, OptionList::ldflags}) {
    for (const DeviceFileEntry& entry : block.lists[static_cast<std::size_t>(list)]) {
      const std::string& text = entry.value.text();
      if (text.empty() || text[0] != '-') continue;
      const std::string name(list_name(list));
      const std::string bare = text.substr(std::min(text.find_first_not_of('-'), text.size()));
      std::ostringstream warning;
      warning << file.path << ":" << entry.line << ": " << name << " entry \"" << text
              << "\" starts with '-', and Inductor adds a '-' to each " << name
              << " entry, so the compiler gets \"-" << text << "\"; write \"" << bare
              << "\" (or put the whole flag in passthrough_args)";
      out.push_back(warning.str());
    }
  }
}

}  // namespace

std::vector<std::string> device_file_warnings(const DeviceFile& file) {
  std::vector<std::string> out;
  check_block(file, file.lists, out);
  for (const ListBlock& block : file.when) check_block(file, block, out);
  for (const auto& [name, layer] : file.layers) check_block(file, layer.lists, out);
  for (const auto& [name, backend] : file.backends) check_block(file, backend.lists, out);
  return out;
}

}  // namespace kbuild
