#include "devices/device_file_lint.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "devices/builtin_devices.hpp"

namespace kbuild {

namespace {

// cflags and ldflags entries that start with '-': Inductor adds one itself.
void check_dash(const DeviceFile& file, OptionList list, const DeviceFileEntry& entry,
                std::vector<std::string>& out) {
  const std::string& text = entry.value.text();
  if (text.empty() || text[0] != '-') return;
  const std::string name(list_name(list));
  const std::string bare = text.substr(std::min(text.find_first_not_of('-'), text.size()));
  std::ostringstream warning;
  warning << file.path << ":" << entry.line << ": " << name << " entry \"" << text
          << "\" starts with '-', and Inductor adds a '-' to each " << name
          << " entry, so the compiler gets \"-" << text << "\"; write \"" << bare
          << "\" (or put the whole flag in passthrough_args)";
  out.push_back(warning.str());
}

// The flag Inductor writes before each entry of `list`, or "" for none.
std::string prefix_of(OptionList list) {
  switch (list) {
    case OptionList::libraries: return "-l";
    case OptionList::include_dirs: return "-I";
    case OptionList::libraries_dirs: return "-L";
    default: return "";
  }
}

// libraries, include_dirs and libraries_dirs entries that carry the flag
// Inductor adds itself ("-lfoo" would reach the compiler as "-l-lfoo").
void check_prefix(const DeviceFile& file, OptionList list, const DeviceFileEntry& entry,
                  std::vector<std::string>& out) {
  const std::string prefix = prefix_of(list);
  const std::string& text = entry.value.text();
  if (prefix.empty() || text.rfind(prefix, 0) != 0) return;
  const std::string name(list_name(list));
  std::ostringstream warning;
  warning << file.path << ":" << entry.line << ": " << name << " entry \"" << text
          << "\" starts with " << prefix << ", and Inductor puts " << prefix << " before each "
          << name << " entry, so the compiler gets \"" << prefix << text << "\"; write \""
          << text.substr(prefix.size()) << "\"";
  out.push_back(warning.str());
}

void check_block(const DeviceFile& file, const ListBlock& block, std::vector<std::string>& out) {
  for (OptionList list : kAllOptionLists) {
    for (const DeviceFileEntry& entry : block.lists[static_cast<std::size_t>(list)]) {
      if (list == OptionList::cflags || list == OptionList::ldflags)
        check_dash(file, list, entry, out);
      else
        check_prefix(file, list, entry, out);
    }
  }
}

// "mode": "extend" appends to a built-in device's options; another device
// has none, so the word changes nothing a reader would expect.
std::optional<std::string> extend_warning(const DeviceFile& file) {
  if (file.mode != RegistrationMode::extend) return std::nullopt;
  std::string builtins;
  for (const auto& [name, provider] : builtin_providers()) {
    if (name == file.device) return std::nullopt;
    builtins += (builtins.empty() ? "" : ", ") + name;
  }
  return file.path + ":" + std::to_string(file.mode_line) + ": \"mode\": \"extend\" on device '" +
         file.device + "', which is not built in: there are no built-in options to extend, " +
         "only the default ones every device gets; drop \"mode\", or extend a built-in device (" +
         builtins + ")";
}

}  // namespace

std::vector<std::string> device_file_warnings(const DeviceFile& file) {
  std::vector<std::string> out;
  check_block(file, file.lists, out);
  for (const ListBlock& block : file.when) check_block(file, block, out);
  for (const auto& [name, layer] : file.layers) check_block(file, layer.lists, out);
  for (const auto& [name, backend] : file.backends) check_block(file, backend.lists, out);
  if (auto warning = extend_warning(file)) out.push_back(*warning);
  return out;
}

}  // namespace kbuild
