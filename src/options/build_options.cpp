
#include "kbuild/build_options.hpp"

#include <algorithm>

namespace kbuild {

std::string_view list_name(OptionList list) {
  switch (list) {
    case OptionList::definitions: return "definitions";
    case OptionList::include_dirs: return "include_dirs";
    case OptionList::cflags: return "cflags";
    case OptionList::ldflags: return "ldflags";
    case OptionList::libraries_dirs: return "libraries_dirs";
    case OptionList::libraries: return "libraries";
    case OptionList::passthrough_args: return "passthrough_args";
  }
  return "";
}

std::optional<OptionList> list_from_name(std::string_view name) {
  for (OptionList list : kAllOptionLists)
    if (list_name(list) == name) return list;
  return std::nullopt;
}

std::string_view layer_name(Layer layer) {
  switch (layer) {
    case Layer::base: return "base";
    case Layer::torch: return "torch";
    case Layer::device: return "device";
    case Layer::user: return "user";
  }
  return "";
}

void BuildOptions::add(OptionList list, std::string value, const Origin& origin) {
  lists_[static_cast<std::size_t>(list)].push_back(Entry{std::move(value), origin});
}

void BuildOptions::append(const BuildOptions& other) {
  for (std::size_t i = 0; i < kOptionListCount; ++i)
    lists_[i].insert(lists_[i].end(), other.lists_[i].begin(), other.lists_[i].end());
}

void BuildOptions::remove(OptionList list, std::string_view value) {
  auto& entries = lists_[static_cast<std::size_t>(list)];
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const Entry& e) { return e.value == value; }),
                entries.end());
}

void BuildOptions::drop(OptionList list, std::string_view value, const std::string& reason) {
  for (const Entry& e : entries(list))
    if (e.value == value) dropped_.push_back({list, e, reason});
  remove(list, value);
}

void BuildOptions::replace(OptionList list, std::string_view value, const std::string& replacement,
                           const Origin& origin, const std::string& reason) {
  for (Entry& e : lists_[static_cast<std::size_t>(list)]) {
    if (e.value != value) continue;
    dropped_.push_back({list, e, reason});
    e = Entry{replacement, origin};
  }
}

std::vector<std::string> BuildOptions::values(OptionList list) const {
  std::vector<std::string> out;
  for (const Entry& e : entries(list)) out.push_back(e.value);
  return out;
}

bool BuildOptions::empty() const {
  return std::all_of(lists_.begin(), lists_.end(), [](const auto& l) { return l.empty(); });
}

void BuildOptions::finalize(bool compile_only) {
  if (compile_only) {
    for (OptionList list : {OptionList::libraries_dirs, OptionList::libraries}) {
      auto& entries = lists_[static_cast<std::size_t>(list)];
      for (Entry& e : entries)
        dropped_.push_back({list, std::move(e), "compile only: nothing is linked"});
      entries.clear();
    }
  }
  for (OptionList list : kAllOptionLists) {
    auto& entries = lists_[static_cast<std::size_t>(list)];
    std::vector<Entry> kept;
    for (Entry& e : entries) {
      auto first = std::find_if(kept.begin(), kept.end(),
                                [&](const Entry& k) { return k.value == e.value; });
      if (first == kept.end()) {
        kept.push_back(std::move(e));
      } else {
        std::string reason = "duplicate of the entry from " + first->origin.provider;
        dropped_.push_back({list, std::move(e), std::move(reason)});
      }
    }
    entries = std::move(kept);
  }
}

}  // namespace kbuild
