// build_options: Inductor's build options (the seven lists and the mode flags) and a device's
// answer.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The build options: Inductor's 7 lists, appended layer by layer, with the
// origin of every entry kept for `explain` and error messages.
namespace kbuild {

// The 7 lists, in the order of Inductor's tuple.
enum class OptionList {
  definitions,
  include_dirs,
  cflags,
  ldflags,
  libraries_dirs,
  libraries,
  passthrough_args,
};
inline constexpr std::size_t kOptionListCount = 7;
inline constexpr std::array<OptionList, kOptionListCount> kAllOptionLists = {
    OptionList::definitions,     OptionList::include_dirs,   OptionList::cflags,
    OptionList::ldflags,         OptionList::libraries_dirs, OptionList::libraries,
    OptionList::passthrough_args};

// The key used in JSON and in device files ("definitions", "include_dirs", ...).
std::string_view list_name(OptionList list);
std::optional<OptionList> list_from_name(std::string_view name);

// Layers are appended in this order: base -> torch -> device -> user.
enum class Layer { base, torch, device, user };
std::string_view layer_name(Layer layer);

// Where an entry came from.
struct Origin {
  Layer layer = Layer::base;
  std::string provider;  // e.g. "base", "torch", "built-in cuda", "config npu"
  std::string file;      // device file, when the entry came from one
  int line = 0;          // 1-based line in `file`, 0 when unknown

  // "file:line" ("file" when the line is unknown), or "" when the entry came from no file.
  std::string file_line() const {
    if (file.empty()) return "";
    return line > 0 ? file + ":" + std::to_string(line) : file;
  }
  // "provider, file:line", or the provider alone.
  std::string describe() const { return file.empty() ? provider : provider + ", " + file_line(); }
};

struct Entry {
  std::string value;
  Origin origin;
};

// An entry removed by finalize(): a duplicate of an earlier one, or a library
// (dir) dropped because nothing is linked.
struct DroppedEntry {
  OptionList list;
  Entry entry;
  std::string reason;
};

class BuildOptions {
 public:
  void add(OptionList list, std::string value, const Origin& origin);
  // Appends every list of `other` after this one's (one layer after another).
  void append(const BuildOptions& other);
  // Removes every entry of `list` equal to `value`.
  void remove(OptionList list, std::string_view value);
  // Removes them and remembers each in dropped() with `reason` (explain).
  void drop(OptionList list, std::string_view value, const std::string& reason);
  // Puts `replacement` from `origin` in place of each entry equal to `value`;
  // the old entries are remembered in dropped() with `reason`.
  void replace(OptionList list, std::string_view value, const std::string& replacement,
               const Origin& origin, const std::string& reason);

  const std::vector<Entry>& entries(OptionList list) const {
    return lists_[static_cast<std::size_t>(list)];
  }
  std::vector<std::string> values(OptionList list) const;
  bool empty() const;

  // As Inductor does before rendering: when compiling only, library dirs and
  // libraries are emptied; then each list is de-duplicated keeping the first.
  void finalize(bool compile_only);
  const std::vector<DroppedEntry>& dropped() const { return dropped_; }

 private:
  std::array<std::vector<Entry>, kOptionListCount> lists_;
  std::vector<DroppedEntry> dropped_;
};

}  // namespace kbuild

// What a layer or provider returns: options plus one-line notes for the
// user (entries left out and why). Notes are never errors.
namespace kbuild {

struct OptionsResult {
  BuildOptions options;
  std::vector<std::string> notes;
};

}  // namespace kbuild
